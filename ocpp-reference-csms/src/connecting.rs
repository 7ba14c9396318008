//! Who is let in: an upgrade decided on the station's credentials and client certificate
//! ([`Csms::on_upgrade`]), and the security profile and Basic password an operator sets.

use ocpp_proto::{ChargePointIdentity, IncomingUpgrade, Rejection};

use crate::{credentials, ChangeError, Credentials, Csms, Record, SecurityProfile};

/// How the charge point reached us, as the I/O loop knows it: what [`Csms::on_upgrade`]
/// decides on besides the upgrade request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// Plain TCP (`ws://`).
    #[default]
    Plain,
    /// TLS (`wss://`).
    Tls {
        /// The client certificate the TLS layer verified against `--client-ca` (security
        /// profile 3), if the charge point presented one.
        client_certificate: Option<ClientCertificate>,
    },
}

/// A client certificate the TLS layer verified.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientCertificate {
    /// The subject Common Name, which names the charge point (OCPP 2.0.1 A00, security
    /// profile 3); `None` when the certificate has none.
    pub common_name: Option<String>,
}

impl ClientCertificate {
    /// A verified certificate with this subject CN.
    pub fn new(common_name: Option<String>) -> Self {
        ClientCertificate { common_name }
    }
}

impl Csms {
    /// Decides on an upgrade request, before the upgrade completes, with
    /// [`credentials::decide`] (the table of its module: per-station security profiles, 401
    /// for credentials missing or wrong, 403 for a certificate naming another identity or a
    /// transport below the station's profile). Every refusal counts in
    /// `ocpp_upgrades_rejected_total`. A station accepted with its certificate is held to
    /// profile 3 from then on (no downgrade, OCPP 2.0.1 A05) when there is a credentials
    /// store.
    ///
    /// ```
    /// use ocpp_reference_csms::{ClientCertificate, Csms, CsmsConfig, Transport};
    /// # use ocpp_proto::{Connection, ConnectionConfig, Event};
    /// # use std::{sync::Arc, time::Instant};
    /// # let mut connection =
    /// #     Connection::accept_incoming(Instant::now(), Arc::new(ConnectionConfig::default()));
    /// # connection.handle_data(Instant::now(), b"GET /ocpp/CP001 HTTP/1.1\r\nHost: x\r\n\
    /// #     Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
    /// #     Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: ocpp1.6\r\n\r\n");
    /// # let Some(Event::UpgradeRequested(upgrade)) = connection.poll_event() else { panic!() };
    /// let csms = Csms::new(CsmsConfig::default().client_certificates(true));
    /// let tls = |cn: &str| Transport::Tls {
    ///     client_certificate: Some(ClientCertificate::new(Some(cn.into()))),
    /// };
    /// // `upgrade` asks for ws://.../ocpp/CP001
    /// assert_eq!(csms.on_upgrade(&upgrade, &tls("CP001")), Ok(()));
    /// assert!(matches!(csms.on_upgrade(&upgrade, &tls("CP002")), Err(r) if r.status == 403));
    /// ```
    pub fn on_upgrade(
        &self,
        upgrade: &IncomingUpgrade,
        transport: &Transport,
    ) -> Result<(), Rejection> {
        let decided = credentials::decide(
            self.credentials
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref(),
            self.config.client_certificates,
            &upgrade.identity,
            upgrade.credentials.as_ref(),
            transport,
        );
        match decided {
            Ok(profile) => {
                if profile == Some(SecurityProfile::TlsClientCertificate) {
                    self.hold_to_certificates(&upgrade.identity);
                }
                self.keep_client_certificate(&upgrade.identity, transport);
                Ok(())
            }
            Err(refusal) => {
                self.metrics.upgrades_rejected.inc();
                tracing::info!(identity = %upgrade.identity, status = refusal.status, reason = refusal.reason, "upgrade rejected");
                Err(Rejection::new(refusal.status, refusal.reason))
            }
        }
    }

    /// Keeps the verified client certificate of an accepted upgrade in the station's state
    /// (`GET /chargepoints/ID`), or clears the one of an earlier connection. A station that
    /// never presented one costs nothing here.
    fn keep_client_certificate(&self, identity: &ChargePointIdentity, transport: &Transport) {
        let certificate = match transport {
            Transport::Tls {
                client_certificate: Some(certificate),
            } => Some(certificate.clone()),
            _ => None,
        };
        let mut charge_points = self.lock();
        match certificate {
            Some(certificate) => {
                charge_points
                    .entry(identity)
                    .extras
                    .get_mut()
                    .client_certificate = Some(certificate);
            }
            None => {
                if let Some(charge_point) = charge_points.get_mut(identity.as_str()) {
                    if charge_point.extras.client_certificate.is_some() {
                        charge_point.extras.get_mut().client_certificate = None;
                    }
                }
            }
        }
    }

    /// No downgrade: a station that connected with its certificate gets profile 3 as its own.
    fn hold_to_certificates(&self, identity: &ChargePointIdentity) {
        let profile = SecurityProfile::TlsClientCertificate;
        let held = |credentials: &Option<Credentials>| match credentials {
            None => true,
            Some(c) => c.profile(identity.as_str()) == Some(profile),
        };
        if held(&self.credentials.read().unwrap_or_else(|p| p.into_inner())) {
            return;
        }
        let mut credentials = self.credentials.write().unwrap_or_else(|p| p.into_inner());
        if let Some(credentials) = credentials.as_mut() {
            credentials.set_profile(identity.as_str(), Some(profile));
            tracing::info!(%identity, "connected with its certificate: held to security profile 3");
        }
    }

    /// The security profile of a station: its own (`None`: the server's), the server's
    /// default (`None`: no authentication), and whether it has a Basic password.
    pub fn security_profile(
        &self,
        identity: &ChargePointIdentity,
    ) -> (Option<SecurityProfile>, Option<SecurityProfile>, bool) {
        let credentials = self.credentials.read().unwrap_or_else(|p| p.into_inner());
        let own = credentials
            .as_ref()
            .and_then(|c| c.profile(identity.as_str()));
        let password = credentials
            .as_ref()
            .is_some_and(|c| c.has_password(identity.as_str()));
        let default = if self.config.client_certificates {
            Some(SecurityProfile::TlsClientCertificate)
        } else {
            credentials.as_ref().map(|_| SecurityProfile::Basic)
        };
        (own, default, password)
    }

    /// Sets (or with `None` clears) a station's own security profile, from its next
    /// connection on. Refused without a credentials store (`--basic-auth` or
    /// `--security-profiles`): creating one would refuse every station without a password.
    ///
    /// # Errors
    /// No credentials store, or the store could not commit it: nothing changed.
    pub fn set_security_profile(
        &self,
        identity: &ChargePointIdentity,
        profile: Option<SecurityProfile>,
    ) -> Result<(), ChangeError> {
        let record = Record::SecurityProfile {
            identity: identity.as_str().to_owned(),
            profile,
        };
        self.change_credentials(record, |credentials| {
            credentials.set_profile(identity.as_str(), profile);
        })
    }

    /// Sets (or with `None` removes) a station's Basic password, from its next connection on
    /// (`PUT|DELETE /chargepoints/ID/password`: the operator sets the password a station was
    /// given by other means, e.g. back after a test case changed it). Refused without a
    /// credentials store, as [`Csms::set_security_profile`] is.
    ///
    /// # Errors
    /// No credentials store, or the store could not commit it: nothing changed.
    pub fn set_password(
        &self,
        identity: &ChargePointIdentity,
        password: Option<&str>,
    ) -> Result<(), ChangeError> {
        let record = Record::Password {
            identity: identity.as_str().to_owned(),
            sha256: password.map(|p| credentials::password_digest(p.as_bytes())),
        };
        self.change_credentials(record, |credentials| {
            credentials.set_password(identity.as_str(), password.map(str::as_bytes));
        })?;
        tracing::info!(%identity, set = password.is_some(), "Basic password changed by the operator");
        Ok(())
    }
}
