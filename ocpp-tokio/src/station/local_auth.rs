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

/// The three routes of one version (`$v`, its module): SendLocalList (its list update read by
/// `ListUpdate::$from`), GetLocalListVersion and ClearCache, each outcome made that version's
/// answer by `$to`.
macro_rules! version_routes {
    ($router:expr, $store:expr, $v:ident, $from:ident, $to:ident) => {{
        let (send, get, clear) = ($store.clone(), $store.clone(), $store.clone());
        $router
            .on(move |_: Session<S, A>, request: $v::SendLocalListRequest| {
                let store = send.clone();
                async move {
                    let update = ListUpdate::$from(&request);
                    Ok(blocking(move || store.send_local_list(&update))
                        .await?
                        .$to())
                }
            })
            .on(move |_: Session<S, A>, _: $v::GetLocalListVersionRequest| {
                let version = get.local_list_version();
                std::future::ready(Ok($v::GetLocalListVersionResponse::new(version)))
            })
            .on(move |_: Session<S, A>, _: $v::ClearCacheRequest| {
                let store = clear.clone();
                async move { Ok(blocking(move || store.clear_cache()).await?.$to()) }
            })
    }};
}

impl LocalAuthExt for LocalAuthStore {
    fn routes<S, A>(&self, router: Router<S, A>) -> Router<S, A>
    where
        S: Send + Sync + 'static,
        A: Clone + Send + Sync + 'static,
    {
        let router = version_routes!(router, self, v1_6, from_v1_6, to_v1_6);
        let router = version_routes!(router, self, v2_0_1, from_v2_0_1, to_v2_0_1);
        version_routes!(router, self, v2_1, from_v2_1, to_v2_1)
    }
}
