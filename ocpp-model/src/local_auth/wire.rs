//! The messages of each version in the words of [`super`]: SendLocalList as a
//! [`ListUpdate`], `IdTagInfo` (1.6) and `IdTokenInfo` (2.x) as an [`Authorization`], a 2.x
//! `IdToken` as an [`IdToken`]. 1.6 and 2.x differ in their shapes only; the answers are
//! built by the caller from [`UpdateStatus`] and [`ClearCacheStatus`] through `as_str`.

use ocpp_messages::{v1_6, v2_0_1, v2_1};

use super::{ClearCacheStatus, ListUpdate, UpdateKind, UpdateStatus};
use crate::{Authorization, AuthorizationStatus, IdToken, IdTokenType};

fn status(wire: &str) -> AuthorizationStatus {
    // A status outside the list (a later version's) cannot authorize.
    AuthorizationStatus::from_wire(wire).unwrap_or(AuthorizationStatus::Invalid)
}

/// A SendLocalList of any version: its version number, its `updateType` as sent and its
/// entries, each read by `entry`.
fn list_update<'a, D: 'a>(
    version: i32,
    update_type: &str,
    list: impl IntoIterator<Item = &'a D>,
    entry: impl Fn(&'a D) -> (IdToken, Option<Authorization>),
) -> ListUpdate {
    ListUpdate {
        version,
        kind: UpdateKind::from_wire(update_type).unwrap_or(UpdateKind::Differential),
        entries: list.into_iter().map(entry).collect(),
    }
}

impl Authorization {
    /// A 1.6 `IdTagInfo` (§7.24): status, `expiryDate`, `parentIdTag` (as an idTag).
    ///
    /// ```
    /// use ocpp_messages::v1_6;
    /// use ocpp_model::{Authorization, AuthorizationStatus, IdToken};
    /// let info = v1_6::IdTagInfo::new(v1_6::AuthorizationStatus::Blocked).with_parent_id_tag("G");
    /// let authorization = Authorization::from_v1_6(&info);
    /// assert_eq!(authorization.status, AuthorizationStatus::Blocked);
    /// assert_eq!(authorization.group, Some(IdToken::from_id_tag("G")));
    /// ```
    pub fn from_v1_6(info: &v1_6::IdTagInfo) -> Self {
        Authorization {
            status: status(info.status.as_str()),
            expiry: info.expiry_date.clone(),
            group: info.parent_id_tag.as_deref().map(IdToken::from_id_tag),
        }
    }

    /// A 2.0.1 `IdTokenInfo`: status, `cacheExpiryDateTime`, `groupIdToken`.
    pub fn from_v2_0_1(info: &v2_0_1::IdTokenInfo) -> Self {
        Authorization {
            status: status(info.status.as_str()),
            expiry: info.cache_expiry_date_time.clone(),
            group: info.group_id_token.as_ref().map(IdToken::from_v2_0_1),
        }
    }

    /// A 2.1 `IdTokenInfo`: status, `cacheExpiryDateTime`, `groupIdToken`.
    pub fn from_v2_1(info: &v2_1::IdTokenInfo) -> Self {
        Authorization {
            status: status(info.status.as_str()),
            expiry: info.cache_expiry_date_time.clone(),
            group: info.group_id_token.as_ref().map(IdToken::from_v2_1),
        }
    }
}

impl IdToken {
    /// A 2.0.1 `IdTokenType`: its value and type.
    ///
    /// ```
    /// use ocpp_messages::v2_0_1;
    /// use ocpp_model::{IdToken, IdTokenType};
    /// let token = v2_0_1::IdToken::new("A1", v2_0_1::IdTokenEnum::from_wire("eMAID"));
    /// assert_eq!(IdToken::from_v2_0_1(&token), IdToken::new("A1", IdTokenType::EMaid));
    /// ```
    pub fn from_v2_0_1(token: &v2_0_1::IdToken) -> Self {
        IdToken::new(
            token.id_token.as_str(),
            IdTokenType::from_wire(token.r#type.as_str()),
        )
    }

    /// A 2.1 `IdTokenType`: its value and (free text) type.
    pub fn from_v2_1(token: &v2_1::IdToken) -> Self {
        IdToken::new(
            token.id_token.as_str(),
            IdTokenType::from_wire(&token.r#type),
        )
    }
}

impl ListUpdate {
    /// A 1.6 SendLocalList (§5.15): `listVersion`, `updateType`, the idTags and their
    /// `idTagInfo`.
    pub fn from_v1_6(request: &v1_6::SendLocalListRequest) -> Self {
        list_update(
            request.list_version,
            request.update_type.as_str(),
            request.local_authorization_list.iter().flatten(),
            |data| {
                (
                    IdToken::from_id_tag(data.id_tag.as_str()),
                    data.id_tag_info.as_ref().map(Authorization::from_v1_6),
                )
            },
        )
    }

    /// A 2.0.1 SendLocalList (D01): `versionNumber`, `updateType`, the idTokens and their
    /// `idTokenInfo`.
    pub fn from_v2_0_1(request: &v2_0_1::SendLocalListRequest) -> Self {
        list_update(
            request.version_number,
            request.update_type.as_str(),
            request.local_authorization_list.iter().flatten(),
            |data| {
                (
                    IdToken::from_v2_0_1(&data.id_token),
                    data.id_token_info.as_ref().map(Authorization::from_v2_0_1),
                )
            },
        )
    }

    /// A 2.1 SendLocalList: as 2.0.1's.
    pub fn from_v2_1(request: &v2_1::SendLocalListRequest) -> Self {
        list_update(
            request.version_number,
            request.update_type.as_str(),
            request.local_authorization_list.iter().flatten(),
            |data| {
                (
                    IdToken::from_v2_1(&data.id_token),
                    data.id_token_info.as_ref().map(Authorization::from_v2_1),
                )
            },
        )
    }
}

impl UpdateStatus {
    /// The 1.6 SendLocalList answer.
    pub fn to_v1_6(self) -> v1_6::SendLocalListResponse {
        v1_6::SendLocalListResponse::new(v1_6::UpdateStatus::from_wire(self.as_str()))
    }

    /// The 2.0.1 SendLocalList answer (`NotSupported` sent as `Failed`).
    pub fn to_v2_0_1(self) -> v2_0_1::SendLocalListResponse {
        v2_0_1::SendLocalListResponse::new(v2_0_1::SendLocalListStatusEnum::from_wire(
            self.for_2_x().as_str(),
        ))
    }

    /// The 2.1 SendLocalList answer (`NotSupported` sent as `Failed`).
    pub fn to_v2_1(self) -> v2_1::SendLocalListResponse {
        v2_1::SendLocalListResponse::new(v2_1::SendLocalListStatusEnum::from_wire(
            self.for_2_x().as_str(),
        ))
    }
}

impl ClearCacheStatus {
    /// The 1.6 ClearCache answer.
    pub fn to_v1_6(self) -> v1_6::ClearCacheResponse {
        v1_6::ClearCacheResponse::new(v1_6::ClearCacheStatus::from_wire(self.as_str()))
    }

    /// The 2.0.1 ClearCache answer.
    pub fn to_v2_0_1(self) -> v2_0_1::ClearCacheResponse {
        v2_0_1::ClearCacheResponse::new(v2_0_1::ClearCacheStatusEnum::from_wire(self.as_str()))
    }

    /// The 2.1 ClearCache answer.
    pub fn to_v2_1(self) -> v2_1::ClearCacheResponse {
        v2_1::ClearCacheResponse::new(v2_1::ClearCacheStatusEnum::from_wire(self.as_str()))
    }
}
