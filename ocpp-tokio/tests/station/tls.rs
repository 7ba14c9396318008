//! Security profiles 2 and 3 over TLS.

use super::*;

// ---------------------------------------------------------------------------------------------
// 6. Security profiles 2 and 3.

/// Profile 2: the password must match; profile 3: the certificate's CN is the identity.
fn tls_router() -> Router<()> {
    accepting(Router::<()>::new(|connecting| {
        let identity = connecting.identity().as_str();
        match connecting.certificate() {
            Some(certificate) if certificate.common_name() == Some(identity) => Ok(()),
            Some(_) => Err(Rejection::FORBIDDEN),
            None => {
                let ok = connecting
                    .credentials()
                    .is_some_and(|c| c.user() == Some(identity) && c.password() == PASSWORD);
                if ok {
                    Ok(())
                } else {
                    Err(Rejection::UNAUTHORIZED)
                }
            }
        }
    }))
}

/// A central system over TLS with [`tls_router`]: profile 2 without `mutual`, 3 with.
async fn tls_csms(pki: &Pki, mutual: bool) -> Csms {
    let builder = Server::builder()
        .config(server_config())
        .tls(server_tls(pki, mutual))
        .handler(tls_router());
    Csms::start_with(builder).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn security_profile_2_and_3_over_tls() {
    let pki = pki();

    // Profile 2: TLS and Basic credentials.
    let csms = tls_csms(&pki, false).await;
    let profile_2 = |password: &[u8], trusted| {
        station_at(&csms.tls_url("CP002"), OcppVersion::V2_0_1)
            .password(password)
            .tls(client_tls(trusted, None))
            .connect()
            .unwrap()
    };
    let station = profile_2(PASSWORD, &pki.ca);
    assert_eq!(
        bounded("accepted over TLS", station.accepted()).await,
        Ok(OcppVersion::V2_0_1)
    );
    close(&station).await;
    // The wrong password: 401 stops it.
    let station = profile_2(b"wrong-password-16", &pki.ca);
    assert_eq!(stopped(&station).await, Err(PermanentFailure::Unauthorized));
    // A station that does not trust the server's CA keeps retrying.
    let station = profile_2(PASSWORD, &pki.rogue_ca);
    keeps_retrying(&station, 3).await;
    close(&station).await;
    csms.stop().await;

    // Profile 3: mutual TLS; the certificate names the identity.
    let csms = tls_csms(&pki, true).await;
    let with_cp001 = |identity: &str| {
        station_at(&csms.tls_url(identity), OcppVersion::V1_6)
            .tls(client_tls(&pki.ca, Some(&pki.cp001)))
            .connect()
            .unwrap()
    };
    let station = with_cp001("CP001");
    assert_eq!(
        bounded("accepted over mutual TLS", station.accepted()).await,
        Ok(OcppVersion::V1_6)
    );
    assert!(csms.charge_points.get("CP001").is_some());
    close(&station).await;
    // CP001's certificate for identity CP003: 403 stops it.
    let station = with_cp001("CP003");
    assert_eq!(stopped(&station).await, Err(PermanentFailure::Forbidden));
    csms.stop().await;
}
