use super::*;

fn ac_needs(max_current: f64) -> ChargingNeeds {
    let payload = json!({"evseId": 1, "maxScheduleTuples": 3, "chargingNeeds": {
        "requestedEnergyTransfer": "AC_three_phase",
        "acChargingParameters": {"energyAmount": 5000, "evMinCurrent": 6,
                                 "evMaxCurrent": max_current, "evMaxVoltage": 230}}});
    ChargingNeeds::from_request(&payload, Some("TX".into()), UnixTime::from_millis(0)).unwrap()
}

fn dc_needs(max_power: f64) -> ChargingNeeds {
    let payload = json!({"evseId": 2, "chargingNeeds": {
        "requestedEnergyTransfer": "DC",
        "dcChargingParameters": {"evMaxCurrent": 200, "evMaxVoltage": 500,
                                 "evMaxPower": max_power}}});
    ChargingNeeds::from_request(&payload, None, UnixTime::from_millis(0)).unwrap()
}

fn amps(a: f64) -> SiteLimit {
    SiteLimit::new(Some(a), None).unwrap()
}

#[test]
fn an_equal_share_never_above_what_the_ev_asked() {
    let needs = ac_needs(32.0);
    let share_of = |site, n| share(site, n, Some(&needs)).unwrap().limit;
    assert_eq!(share_of(amps(40.0), 1), 32.0, "the EV's max caps it");
    assert_eq!(share_of(amps(40.0), 2), 20.0);
    assert_eq!(share_of(amps(40.0), 3), 13.3, "rounded down");
    assert_eq!(share_of(amps(32.0), 2), 16.0, "no 15.9 from float error");
    // No site limit: the EV's own maximum; nothing at all: no profile.
    assert_eq!(share_of(SiteLimit::default(), 4), 32.0);
    assert_eq!(share(SiteLimit::default(), 1, None), None);
    // Zero EVSEs counts as one.
    assert_eq!(share(amps(16.0), 0, None).unwrap().limit, 16.0);
}

#[test]
fn the_unit_follows_the_site_limit_then_the_ev() {
    let both = SiteLimit::new(Some(32.0), Some(50_000.0)).unwrap();
    let watts = SiteLimit::new(None, Some(22_000.0)).unwrap();
    let ac = ac_needs(32.0);
    let dc = dc_needs(100_000.0);
    assert_eq!(unit_for(both, Some(&ac)), RateUnit::Amps);
    assert_eq!(unit_for(both, Some(&dc)), RateUnit::Watts);
    assert_eq!(unit_for(SiteLimit::default(), Some(&dc)), RateUnit::Watts);
    assert_eq!(unit_for(amps(10.0), Some(&dc)), RateUnit::Amps);
    // An AC EV in watts: 32 A x 230 V x 3 phases = 22,080 W, so the site's 22 kW / 2 wins.
    let ac_share = share(watts, 2, Some(&ac)).unwrap();
    assert_eq!((ac_share.unit, ac_share.limit), (RateUnit::Watts, 11_000.0));
    assert_eq!(share(both, 1, Some(&dc)).unwrap().limit, 50_000.0);
    assert_eq!(
        share(both, 1, Some(&dc_needs(30_000.0))).unwrap().limit,
        30_000.0
    );
}

#[test]
fn site_limits_are_positive_numbers() {
    assert_eq!(
        SiteLimit::from_json(&json!({"amps": 32})),
        Ok(SiteLimit {
            amps: Some(32.0),
            watts: None
        })
    );
    assert_eq!(
        SiteLimit::from_json(&json!({})),
        Err(SiteLimitError::Missing)
    );
    for bad in [
        json!({"amps": -1}),
        json!({"amps": "x"}),
        json!({"watts": 0}),
    ] {
        assert!(SiteLimit::from_json(&bad).is_err(), "{bad}");
    }
}

#[test]
fn an_ev_schedule_is_checked_against_our_limit() {
    let schedule = |unit: &str, limits: &[f64]| {
        let periods: Vec<Value> = limits
            .iter()
            .enumerate()
            .map(|(i, l)| json!({"startPeriod": i * 600, "limit": l}))
            .collect();
        json!({"id": 1, "chargingRateUnit": unit, "chargingSchedulePeriod": periods})
    };
    let ours = Some((RateUnit::Amps, 16.0));
    assert_eq!(
        check_schedule(&schedule("A", &[16.0, 10.0]), ours, None),
        ScheduleCheck::Within
    );
    assert_eq!(
        check_schedule(&schedule("A", &[10.0, 16.5]), ours, None),
        ScheduleCheck::Exceeds {
            asked: 16.5,
            limit: 16.0
        }
    );
    // 11 kW on three phases at 230 V is 15.9 A: within 16 A; 22 kW is not.
    let needs = ac_needs(32.0);
    assert_eq!(
        check_schedule(&schedule("W", &[11_000.0]), ours, Some(&needs)),
        ScheduleCheck::Within
    );
    assert!(matches!(
        check_schedule(&schedule("W", &[22_000.0]), ours, Some(&needs)),
        ScheduleCheck::Exceeds { .. }
    ));
    // Nothing of ours to check against, or nothing readable: Accepted.
    assert_eq!(
        check_schedule(&schedule("A", &[100.0]), None, None),
        ScheduleCheck::Within
    );
    assert_eq!(
        check_schedule(&json!({}), ours, None),
        ScheduleCheck::Within
    );
}

#[test]
fn the_profile_decodes_in_both_versions() {
    let needs = ac_needs(32.0);
    let share = share(amps(32.0), 2, Some(&needs)).unwrap();
    let payload = set_charging_profile(
        FIRST_PROFILE_ID,
        1,
        "TX",
        share,
        Some(&needs),
        "2026-01-01T00:00:00Z",
    );
    for version in [OcppVersion::V2_0_1, OcppVersion::V2_1] {
        let request =
            crate::command::decode_command(version, "SetChargingProfile", &payload.to_string())
                .unwrap();
        assert_eq!(serde_json::to_value(&request).unwrap(), payload);
    }
    let profile = &payload["chargingProfile"];
    assert_eq!(profile["chargingProfilePurpose"], "TxProfile");
    assert_eq!(profile["transactionId"], "TX");
    let period = &profile["chargingSchedule"][0]["chargingSchedulePeriod"][0];
    assert_eq!(
        period,
        &json!({"startPeriod": 0, "limit": 16.0, "numberPhases": 3})
    );
    assert_eq!(schedule_limit(profile), Some((RateUnit::Amps, 16.0)));
}

#[test]
fn profiles_keep_their_id_per_transaction_and_their_answers_in_order() {
    let mut state = SmartCharging::default();
    let first = state.profile_id_for(1, "TX1");
    assert_eq!(first, FIRST_PROFILE_ID);
    let payload = |id: i32, tx: &str| {
        json!({"evseId": 1, "chargingProfile": {"id": id, "transactionId": tx,
            "chargingSchedule": [{"chargingRateUnit": "A",
                                  "chargingSchedulePeriod": [{"startPeriod": 0, "limit": 16.0}]}]}})
    };
    let at = UnixTime::from_millis(0);
    state.sent(ChargingProfileRecord::new(
        &payload(first, "TX1"),
        ProfileReason::ChargingNeeds,
        at,
    ));
    assert_eq!(
        state.profile_id_for(1, "TX1"),
        first,
        "the same transaction: the same id"
    );
    let second = state.profile_id_for(1, "TX2");
    assert_eq!(second, FIRST_PROFILE_ID + 1);
    state.sent(ChargingProfileRecord::new(
        &payload(second, "TX2"),
        ProfileReason::Renegotiation,
        at,
    ));
    assert_eq!(state.limit_in_force(1, "TX2"), Some((RateUnit::Amps, 16.0)));
    assert_eq!(
        state.settle("Accepted".into(), at).unwrap().id,
        Some(i64::from(first))
    );
    assert_eq!(
        state.settle("Rejected".into(), at).unwrap().id,
        Some(i64::from(second))
    );
    assert_eq!(state.settle("Accepted".into(), at), None);
    assert_eq!(
        state.limit_in_force(1, "TX2"),
        None,
        "refused: not in force"
    );
    state.clear_asked(Some(i64::from(first)));
    state.clear_answered(true);
    assert!(state.profiles[0].cleared);
    assert_eq!(state.limit_in_force(1, "TX1"), None);
}
