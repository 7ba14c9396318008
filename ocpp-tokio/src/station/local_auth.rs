//! The station's local authorization, served: [`LocalAuthStore`] (of
//! [`ocpp_station_store::local_auth`], re-exported here) holds the Sans-IO
//! [`LocalAuthorization`](ocpp_model::local_auth::LocalAuthorization) of
//! [`ocpp_model::local_auth`] (the local authorization list, its version and the authorization
//! cache), keeps list and cache in a file of a state directory, and decides on a presented token
//! without the central system ([`LocalAuthStore::authorize_locally`]); [`LocalAuthExt`] answers
//! the central system's SendLocalList, GetLocalListVersion and ClearCache (1.6, 2.0.1 and 2.1)
//! through routes it adds to a [`Router`]. [`StationBuilder::local_auth`](super::StationBuilder::local_auth)
//! learns the central system's answers on tokens into the cache.
//!
//! A change is acknowledged (SendLocalList `Accepted`, ClearCache `Accepted`) only once it is
//! durable: written to `<dir>/local_auth.json.tmp`, synced, renamed over `local_auth.json`, and
//! the directory synced (on a blocking thread). When that fails the change is refused
//! (`Failed`, `Rejected`) and leaves no trace, in the file or in memory.
//!
//! The settings (list enabled, limits, cache, offline flags) are the device model's when the
//! store follows a [`DeviceModelStore`](super::DeviceModelStore)
//! ([`LocalAuthStore::follow_device_model`]), otherwise those given to [`LocalAuthStore::open`].
//!
//! ```no_run
//! use ocpp_tokio::model::device_model::{catalogue::Layout, Configuration, DeviceModel};
//! use ocpp_tokio::model::IdToken;
//! use ocpp_tokio::station::{DeviceModelExt, DeviceModelStore, LocalAuthExt, LocalAuthStore};
//! use ocpp_tokio::station::{Station, Status};
//! use ocpp_tokio::{OcppVersion, Router};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let device_model = DeviceModelStore::open(
//!     "/var/lib/charger",
//!     DeviceModel::standard(Layout::new(&[1])),
//!     Configuration::standard(1),
//! )?;
//! let local_auth = LocalAuthStore::open("/var/lib/charger", Default::default())?;
//! local_auth.follow_device_model(&device_model, OcppVersion::V1_6);
//! let router = local_auth.routes(device_model.routes(Router::for_station()));
//! let station = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")?
//!     .handler(router, ())
//!     .connect()?;
//! // A card is presented.
//! let online = matches!(station.status(), Status::Accepted { .. });
//! let decision = local_auth.authorize_locally(&IdToken::from_id_tag("04A2B3C4"), online);
//! if decision.may_charge() { /* start */ }
//! # Ok(()) }
//! ```

use ocpp_model::local_auth::ListUpdate;
use ocpp_proto::{v1_6, v2_0_1, v2_1};
pub use ocpp_station_store::local_auth::*;

use super::device_model::blocking;
use crate::{Router, Session};

/// What ocpp-tokio does with a [`LocalAuthStore`]: serves it on a station's [`Router`].
/// Implemented for [`LocalAuthStore`] only.
pub trait LocalAuthExt {
    /// Adds the routes of local authorization to `router`: SendLocalList, GetLocalListVersion
    /// and ClearCache of 1.6 (§5.15, §5.10, §5.4), 2.0.1 and 2.1 (D01, D02, C11).
    /// Each change is written on a blocking thread ([`tokio::task::spawn_blocking`]).
    ///
    /// ```
    /// use ocpp_tokio::model::local_auth::Settings;
    /// use ocpp_tokio::station::{LocalAuthExt, LocalAuthStore};
    /// use ocpp_tokio::Router;
    /// let store = LocalAuthStore::in_memory(Settings::default());
    /// let router = store.routes(Router::<()>::for_station());
    /// assert!(format!("{router:?}").contains("SendLocalList"));
    /// ```
    fn routes<S, A>(&self, router: Router<S, A>) -> Router<S, A>
    where
        S: Send + Sync + 'static,
        A: Clone + Send + Sync + 'static;
}

impl LocalAuthExt for LocalAuthStore {
    fn routes<S, A>(&self, router: Router<S, A>) -> Router<S, A>
    where
        S: Send + Sync + 'static,
        A: Clone + Send + Sync + 'static,
    {
        let (s16, g16, c16) = (self.clone(), self.clone(), self.clone());
        let (s201, g201, c201) = (self.clone(), self.clone(), self.clone());
        let (s21, g21, c21) = (self.clone(), self.clone(), self.clone());
        router
            .on(
                move |_: Session<S, A>, request: v1_6::SendLocalListRequest| {
                    let store = s16.clone();
                    async move {
                        let update = ListUpdate::from_v1_6(&request);
                        Ok(blocking(move || store.send_local_list(&update))
                            .await?
                            .to_v1_6())
                    }
                },
            )
            .on(
                move |_: Session<S, A>, _: v1_6::GetLocalListVersionRequest| {
                    let version = g16.local_list_version();
                    std::future::ready(Ok(v1_6::GetLocalListVersionResponse::new(version)))
                },
            )
            .on(move |_: Session<S, A>, _: v1_6::ClearCacheRequest| {
                let store = c16.clone();
                async move { Ok(blocking(move || store.clear_cache()).await?.to_v1_6()) }
            })
            .on(
                move |_: Session<S, A>, request: v2_0_1::SendLocalListRequest| {
                    let store = s201.clone();
                    async move {
                        let update = ListUpdate::from_v2_0_1(&request);
                        Ok(blocking(move || store.send_local_list(&update))
                            .await?
                            .to_v2_0_1())
                    }
                },
            )
            .on(
                move |_: Session<S, A>, _: v2_0_1::GetLocalListVersionRequest| {
                    let version = g201.local_list_version();
                    std::future::ready(Ok(v2_0_1::GetLocalListVersionResponse::new(version)))
                },
            )
            .on(move |_: Session<S, A>, _: v2_0_1::ClearCacheRequest| {
                let store = c201.clone();
                async move { Ok(blocking(move || store.clear_cache()).await?.to_v2_0_1()) }
            })
            .on(
                move |_: Session<S, A>, request: v2_1::SendLocalListRequest| {
                    let store = s21.clone();
                    async move {
                        let update = ListUpdate::from_v2_1(&request);
                        Ok(blocking(move || store.send_local_list(&update))
                            .await?
                            .to_v2_1())
                    }
                },
            )
            .on(
                move |_: Session<S, A>, _: v2_1::GetLocalListVersionRequest| {
                    let version = g21.local_list_version();
                    std::future::ready(Ok(v2_1::GetLocalListVersionResponse::new(version)))
                },
            )
            .on(move |_: Session<S, A>, _: v2_1::ClearCacheRequest| {
                let store = c21.clone();
                async move { Ok(blocking(move || store.clear_cache()).await?.to_v2_1()) }
            })
    }
}
