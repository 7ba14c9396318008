//! Boot until Accepted, and what is held or let out meanwhile.

use super::*;

// ---------------------------------------------------------------------------------------------
// 1. Boot.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boots_until_accepted_after_pending() {
    let boots: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let heartbeats: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let router = Router::<()>::default()
        .on(with(
            &boots,
            |boots, _, _: v1_6::BootNotificationRequest| async move {
                let mut boots = boots.lock().unwrap();
                boots.push(Instant::now());
                Ok(if boots.len() == 1 {
                    boot16(v1_6::RegistrationStatus::Pending, 1)
                } else {
                    boot16(v1_6::RegistrationStatus::Accepted, 1)
                })
            },
        ))
        .on(with(
            &heartbeats,
            |heartbeats, _, _: v1_6::HeartbeatRequest| async move {
                heartbeats.lock().unwrap().push(Instant::now());
                Ok(v1_6::HeartbeatResponse::new(time()))
            },
        ));
    let csms = Csms::start(router).await;

    // The station's router answers GetConfiguration (and would accept remote starts).
    let station_router = Router::<()>::default()
        .on(|_, _: v1_6::GetConfigurationRequest| async {
            let answer: v1_6::GetConfigurationResponse = j(json!({
                "configurationKey": [{"key": "HeartbeatInterval", "readonly": false, "value": "1"}]
            }));
            Ok(answer)
        })
        .on(|_, _: v1_6::RemoteStartTransactionRequest| async {
            Ok(v1_6::RemoteStartTransactionResponse::new(
                v1_6::RemoteStartStopStatus::Accepted,
            ))
        });
    let station = station(&csms, "CP16", OcppVersion::V1_6)
        .info(StationInfo::new("ACME", "Pending"))
        .router(station_router)
        .connect()
        .unwrap();
    let pending = until_pending(&station).await;
    assert!(matches!(
        pending,
        Status::Registering {
            version: OcppVersion::V1_6,
            ..
        }
    ));

    // While Pending: a remote start is refused by the station itself, configuration is served.
    let cp = csms.charge_points.get("CP16").expect("registered");
    let refused = bounded("RemoteStartTransaction", async {
        cp.call(v1_6::RemoteStartTransactionRequest::new("TAG"))
            .await
    })
    .await;
    match refused {
        Err(CallFailure::ErrorResponse { code, .. }) => assert_eq!(code, ErrorCode::SecurityError),
        other => panic!("RemoteStartTransaction while Pending: {other:?}"),
    }
    let configuration = bounded("GetConfiguration", async {
        cp.call(j::<v1_6::GetConfigurationRequest>(json!({}))).await
    })
    .await
    .expect("GetConfiguration answered while Pending");
    let keys = configuration.configuration_key.expect("keys");
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].key, "HeartbeatInterval");
    assert_eq!(
        boots.lock().unwrap().len(),
        1,
        "both calls were made while Pending"
    );

    let version = bounded("accepted", station.accepted()).await.unwrap();
    assert_eq!(version, OcppVersion::V1_6);
    let accepted_at = Instant::now();
    let (first, second) = {
        let boots = boots.lock().unwrap();
        assert_eq!(boots.len(), 2);
        (boots[0], boots[1])
    };
    let gap = second - first;
    assert!(
        gap >= Duration::from_millis(950),
        "the second boot {gap:?} after the first, before the 1 s interval"
    );
    assert!(gap < Duration::from_secs(4), "{gap:?}");
    // The 1 s heartbeat follows the Accepted boot.
    eventually("a heartbeat", || !heartbeats.lock().unwrap().is_empty()).await;
    let beat = heartbeats.lock().unwrap()[0];
    assert!(beat > second);
    assert!(beat + Duration::from_millis(50) >= second + Duration::from_secs(1));
    assert!(beat < accepted_at + Duration::from_secs(4));
    assert_eq!(station.status(), Status::Accepted { version });
    // The interval in force is the Accepted boot's, until the central system changes it.
    assert_eq!(station.heartbeat_interval(), Duration::from_secs(1));
    station.set_heartbeat_interval(Duration::from_secs(7));
    eventually("the new interval", || {
        station.heartbeat_interval() == Duration::from_secs(7)
    })
    .await;

    close(&station).await;
    assert_eq!(station.status(), Status::Stopped);
    csms.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_made_while_pending_waits_for_accepted_on_2_0_1() {
    let log: Arc<Mutex<Vec<(&'static str, Instant)>>> = Arc::default();
    let router = Router::<()>::default()
        .on(with(
            &log,
            |log, _, request: v2_0_1::BootNotificationRequest| async move {
                assert_eq!(
                    request.reason,
                    v2_0_1::BootReasonEnum::PowerUp,
                    "the first connection boots with PowerUp"
                );
                let mut log = log.lock().unwrap();
                let first = !log.iter().any(|(what, _)| *what == "Pending");
                let status = if first {
                    log.push(("Pending", Instant::now()));
                    v2_0_1::RegistrationStatusEnum::Pending
                } else {
                    log.push(("Accepted", Instant::now()));
                    v2_0_1::RegistrationStatusEnum::Accepted
                };
                Ok(boot201(status, 1))
            },
        ))
        .on(with(
            &log,
            |log, _, _: v2_0_1::StatusNotificationRequest| async move {
                log.lock()
                    .unwrap()
                    .push(("StatusNotification", Instant::now()));
                Ok(v2_0_1::StatusNotificationResponse::default())
            },
        ));
    let csms = Csms::start(router).await;
    let station = station(&csms, "CP201", OcppVersion::V2_0_1)
        .connect()
        .unwrap();
    until_pending(&station).await;
    // A RequestStartTransaction of the CSMS is refused while Pending.
    let cp = csms.charge_points.get("CP201").expect("registered");
    let request: v2_0_1::RequestStartTransactionRequest = j(json!({
        "idToken": {"idToken": "TAG", "type": "ISO14443"}, "remoteStartId": 1
    }));
    match bounded("RequestStartTransaction", cp.call(request)).await {
        Err(CallFailure::ErrorResponse { code, .. }) => assert_eq!(code, ErrorCode::SecurityError),
        other => panic!("RequestStartTransaction while Pending: {other:?}"),
    }
    // A station call made while Pending is held until Accepted.
    let status = v2_0_1::StatusNotificationRequest::new(
        time(),
        v2_0_1::ConnectorStatusEnum::Available,
        1,
        1,
    );
    let call = tokio::spawn({
        let station = station.clone();
        async move { station.call(status).await }
    });
    bounded("the held call", call)
        .await
        .unwrap()
        .expect("StatusNotification answered");
    let log = log.lock().unwrap().clone();
    let order: Vec<&str> = log.iter().map(|(what, _)| *what).collect();
    assert_eq!(order, ["Pending", "Accepted", "StatusNotification"]);
    assert!(log[1].1 - log[0].1 >= Duration::from_millis(950), "{log:?}");
    assert!(matches!(station.status(), Status::Accepted { .. }));
    close(&station).await;
    csms.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_held_past_its_call_timeout_ends_unsent() {
    // The CSMS keeps the station Pending (next boot in 60 s); the station's call timeout is
    // 500 ms: its StatusNotification ends DeadlinePassed (safe to retry) and never goes out.
    let log: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let router = Router::<()>::default()
        .on(with(
            &log,
            |log, _, _: v2_0_1::BootNotificationRequest| async move {
                log.lock().unwrap().push("BootNotification");
                Ok(boot201(v2_0_1::RegistrationStatusEnum::Pending, 60))
            },
        ))
        .on(with(
            &log,
            |log, _, _: v2_0_1::StatusNotificationRequest| async move {
                log.lock().unwrap().push("StatusNotification");
                Ok(v2_0_1::StatusNotificationResponse::default())
            },
        ));
    let csms = Csms::start(router).await;
    let config = ConnectionConfig::default().call_timeout(Duration::from_millis(500));
    let station = station(&csms, "CP-HELD", OcppVersion::V2_0_1)
        .config(config)
        .connect()
        .unwrap();
    until_pending(&station).await;
    let status = v2_0_1::StatusNotificationRequest::new(
        time(),
        v2_0_1::ConnectorStatusEnum::Available,
        1,
        1,
    );
    let asked = Instant::now();
    let outcome = bounded("the held call", station.call(status)).await;
    assert_eq!(outcome.unwrap_err(), CallFailure::DeadlinePassed);
    assert!(asked.elapsed() >= Duration::from_millis(450));
    assert!(!CallFailure::DeadlinePassed.may_have_reached_peer());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(*log.lock().unwrap(), ["BootNotification"]);
    close(&station).await;
    csms.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_triggered_message_goes_out_while_pending() {
    let log: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let router = Router::<()>::default()
        .on(with(
            &log,
            |log, _, _: v1_6::BootNotificationRequest| async move {
                let mut log = log.lock().unwrap();
                let first = !log.contains(&"Pending");
                log.push(if first { "Pending" } else { "Accepted" });
                Ok(if first {
                    boot16(v1_6::RegistrationStatus::Pending, 2)
                } else {
                    boot16(v1_6::RegistrationStatus::Accepted, 300)
                })
            },
        ))
        .on(with(
            &log,
            |log, _, _: v1_6::StatusNotificationRequest| async move {
                log.lock().unwrap().push("StatusNotification");
                Ok(v1_6::StatusNotificationResponse::default())
            },
        ))
        .on(with(&log, |log, _, _: v1_6::AuthorizeRequest| async move {
            log.lock().unwrap().push("Authorize");
            let answer: v1_6::AuthorizeResponse = j(json!({"idTagInfo": {"status": "Accepted"}}));
            Ok(answer)
        }));
    let csms = Csms::start(router).await;
    // The station answers a StatusNotification trigger and sends it from a task of its own.
    let station_router =
        Router::<()>::default().on(|session: Session<()>, _: v1_6::TriggerMessageRequest| {
            let cp = session.charge_point().clone();
            async move {
                tokio::spawn(async move {
                    let status: v1_6::StatusNotificationRequest = j(json!({
                        "connectorId": 1, "errorCode": "NoError", "status": "Available"
                    }));
                    cp.call(status).await
                });
                Ok(j::<v1_6::TriggerMessageResponse>(
                    json!({"status": "Accepted"}),
                ))
            }
        });
    let station = station(&csms, "TRIGGER", OcppVersion::V1_6)
        .router(station_router)
        .connect()
        .unwrap();
    until_pending(&station).await;
    // An Authorize of the station's own is held while Pending.
    let authorize = tokio::spawn({
        let station = station.clone();
        async move { station.call(v1_6::AuthorizeRequest::new("TAG")).await }
    });
    let cp = csms.charge_points.get("TRIGGER").unwrap();
    let trigger: v1_6::TriggerMessageRequest = j(json!({"requestedMessage": "StatusNotification"}));
    let answer = bounded("TriggerMessage", cp.call(trigger)).await.unwrap();
    assert_eq!(answer.status, j(json!("Accepted")));
    eventually("the triggered StatusNotification", || {
        log.lock().unwrap().contains(&"StatusNotification")
    })
    .await;
    bounded("Authorize", authorize).await.unwrap().unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        ["Pending", "StatusNotification", "Accepted", "Authorize"]
    );
    close(&station).await;
    csms.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_triggered_boot_goes_out_once_its_trigger_is_accepted_and_after_the_one_in_flight() {
    // The central system answers the first boot only after it triggered another: the
    // triggered boot waits for the one in flight (one BootNotification in flight at a time),
    // then goes out with reason Triggered, and its answer is the registration's.
    let reasons: Arc<Mutex<Vec<String>>> = Arc::default();
    let router = Router::<()>::default().on(with(
        &reasons,
        |reasons, session: Session<()>, boot: v2_0_1::BootNotificationRequest| async move {
            let reason = serde_json::to_value(&boot.reason).unwrap();
            let first = {
                let mut reasons = reasons.lock().unwrap();
                reasons.push(reason.as_str().unwrap().to_owned());
                reasons.len() == 1
            };
            if first {
                let cp = session.charge_point().clone();
                let trigger: v2_0_1::TriggerMessageRequest =
                    j(json!({"requestedMessage": "BootNotification"}));
                let answer = bounded("TriggerMessage", cp.call(trigger)).await.unwrap();
                assert_eq!(answer.status, j(json!("Accepted")));
            }
            Ok(boot201(v2_0_1::RegistrationStatusEnum::Accepted, 300))
        },
    ));
    let csms = Csms::start(router).await;
    let station_router = Router::<()>::default().on(|_, _: v2_0_1::TriggerMessageRequest| async {
        Ok(j::<v2_0_1::TriggerMessageResponse>(
            json!({"status": "Accepted"}),
        ))
    });
    let station = station(&csms, "TRIGGERBOOT", OcppVersion::V2_0_1)
        .router(station_router)
        .connect()
        .unwrap();
    bounded("accepted", station.accepted()).await.unwrap();
    eventually("the triggered BootNotification", || {
        reasons.lock().unwrap().len() == 2
    })
    .await;
    assert_eq!(*reasons.lock().unwrap(), ["PowerUp", "Triggered"]);
    // Nothing more: one trigger, one boot.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(reasons.lock().unwrap().len(), 2);
    close(&station).await;
    csms.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_2_x_station_rejects_a_triggered_boot_itself() {
    // OCPP 2.0.1 F06.FR.17: once Accepted, a TriggerMessage for a BootNotification is
    // Rejected, whatever the application would say (its handler accepts every trigger); on
    // 1.6 the application's answer stands and the boot goes.
    for version in [OcppVersion::V2_0_1, OcppVersion::V1_6] {
        let boots = Arc::new(AtomicUsize::new(0));
        let router = Router::<()>::default()
            .on(with(
                &boots,
                |boots, _, _: v2_0_1::BootNotificationRequest| async move {
                    boots.fetch_add(1, Ordering::Relaxed);
                    Ok(boot201(v2_0_1::RegistrationStatusEnum::Accepted, 300))
                },
            ))
            .on(with(
                &boots,
                |boots, _, _: v1_6::BootNotificationRequest| async move {
                    boots.fetch_add(1, Ordering::Relaxed);
                    Ok(boot16(v1_6::RegistrationStatus::Accepted, 300))
                },
            ));
        let csms = Csms::start(router).await;
        let handled = Arc::new(AtomicUsize::new(0));
        let station_router = Router::<()>::default()
            .on(with(
                &handled,
                |handled, _, _: v2_0_1::TriggerMessageRequest| async move {
                    handled.fetch_add(1, Ordering::Relaxed);
                    Ok(j::<v2_0_1::TriggerMessageResponse>(
                        json!({"status": "Accepted"}),
                    ))
                },
            ))
            .on(with(
                &handled,
                |handled, _, _: v1_6::TriggerMessageRequest| async move {
                    handled.fetch_add(1, Ordering::Relaxed);
                    Ok(j::<v1_6::TriggerMessageResponse>(
                        json!({"status": "Accepted"}),
                    ))
                },
            ));
        let station = station(&csms, "TRIGGERED", version)
            .router(station_router)
            .connect()
            .unwrap();
        bounded("accepted", station.accepted()).await.unwrap();
        let cp = csms.charge_points.get("TRIGGERED").unwrap();
        if version == OcppVersion::V1_6 {
            let trigger: v1_6::TriggerMessageRequest =
                j(json!({"requestedMessage": "BootNotification"}));
            let answer = bounded("TriggerMessage", cp.call(trigger)).await.unwrap();
            assert_eq!(answer.status, j(json!("Accepted")));
            eventually("the triggered boot", || boots.load(Ordering::Relaxed) == 2).await;
            assert_eq!(handled.load(Ordering::Relaxed), 1);
        } else {
            let trigger: v2_0_1::TriggerMessageRequest =
                j(json!({"requestedMessage": "BootNotification"}));
            let answer = bounded("TriggerMessage", cp.call(trigger)).await.unwrap();
            assert_eq!(answer.status, j(json!("Rejected")));
            let reason = answer.status_info.map(|info| info.reason_code);
            assert_eq!(reason.as_deref(), Some("AlreadyAccepted"));
            tokio::time::sleep(Duration::from_millis(200)).await;
            assert_eq!(boots.load(Ordering::Relaxed), 1);
            assert_eq!(handled.load(Ordering::Relaxed), 0, "the application saw it");
        }
        close(&station).await;
        csms.stop().await;
    }
}
