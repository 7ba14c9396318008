//! The device model of a charging station, Sans-IO: the 2.x components and variables a
//! central system reads and sets (OCPP 2.0.1 Part 1 §4 "Device model", Part 2 B05-B08), and the
//! 1.6 configuration keys (OCPP 1.6 §9) it gets and changes.
//!
//! - [`DeviceModel`]: components ([`ComponentId`]) with their variables ([`VariableEntry`]):
//!   attributes ([`Attribute`]: Actual, Target, MinSet, MaxSet, with their mutability) and
//!   characteristics ([`Characteristics`]: data type, unit, limits, values list). It answers
//!   GetVariables and SetVariables (each value checked against its characteristics before it is
//!   set) and makes the NotifyReports of a GetBaseReport ([`report`]).
//! - [`catalogue`]: the standard components and variables of OCPP 2.0.1 Part 2 ("Referenced
//!   Components and Variables" of each functional block) that every station has, as typed data.
//! - [`Configuration`]: the 1.6 keys ([`ConfigurationKey`]), the standard ones of §9
//!   ([`Configuration::standard`]) and the application's own; it answers GetConfiguration and
//!   ChangeConfiguration.
//!
//! Both say what a set changed ([`Change`]) and hand out the values that must survive a reboot
//! ([`DeviceModel::persistent_values`], [`Configuration::persistent_values`]); keeping them
//! is the I/O half's (ocpp-tokio's `station::DeviceModelStore`), which acknowledges a change only
//! once it is on disk.
//!
//! ```
//! use ocpp_model::device_model::{catalogue, DeviceModel, SetStatus};
//! use ocpp_model::device_model::AttributeType::Actual;
//!
//! let mut model = DeviceModel::standard(catalogue::Layout::new(&[1]));
//! let set = model.set("OCPPCommCtrlr", None, "HeartbeatInterval", None, Actual, "300");
//! assert_eq!(set.status, SetStatus::Accepted);
//! assert_eq!(model.value("OCPPCommCtrlr", "HeartbeatInterval").as_deref(), Some("300"));
//! let refused = model.set("OCPPCommCtrlr", None, "HeartbeatInterval", None, Actual, "soon");
//! assert_eq!(refused.status, SetStatus::Rejected);
//! ```

pub mod catalogue;
mod configuration;
pub mod report;
mod variable;

use ocpp_messages::v2_0_1 as m;

pub use configuration::{
    ChangeStatus, Configuration, ConfigurationKey, KeyType, TooManyKeys, MEASURANDS,
};
pub use variable::{Attribute, AttributeType, Characteristics, DataType, Mutability, ValueError};

/// A component (`ComponentType`): its name, instance and, for one of an EVSE or connector, the
/// EVSE (`evse`, with a connector when `connector` is set).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ComponentId {
    /// The name (`OCPPCommCtrlr`, `EVSE`, `Connector`...).
    pub name: String,
    /// The instance, when there are several of the name.
    pub instance: Option<String>,
    /// The EVSE it belongs to (`EVSEType.id`).
    pub evse: Option<i32>,
    /// The connector of that EVSE (`EVSEType.connectorId`).
    pub connector: Option<i32>,
}

impl ComponentId {
    /// A component of the station as a whole.
    pub fn new(name: &str) -> Self {
        ComponentId {
            name: name.to_owned(),
            instance: None,
            evse: None,
            connector: None,
        }
    }

    /// Of an EVSE (and a connector).
    #[must_use]
    pub fn at(mut self, evse: i32, connector: Option<i32>) -> Self {
        self.evse = Some(evse);
        self.connector = connector;
        self
    }

    /// Of a wire component.
    pub fn of(component: &m::Component) -> Self {
        ComponentId {
            name: component.name.clone(),
            instance: component.instance.clone(),
            evse: component.evse.as_ref().map(|e| e.id),
            connector: component.evse.as_ref().and_then(|e| e.connector_id),
        }
    }

    /// The wire component.
    pub fn to_v2_0_1(&self) -> m::Component {
        let mut out = m::Component::new(self.name.clone());
        out.instance = self.instance.clone();
        out.evse = self.evse.map(|id| {
            let mut evse = m::EVSE::new(id);
            evse.connector_id = self.connector;
            evse
        });
        out
    }

    /// A stable name: `Name[instance]@evse.connector`.
    fn path(&self) -> String {
        let mut out = self.name.clone();
        if let Some(instance) = &self.instance {
            out.push_str(&format!("[{instance}]"));
        }
        if let Some(evse) = self.evse {
            out.push_str(&format!("@{evse}"));
            if let Some(connector) = self.connector {
                out.push_str(&format!(".{connector}"));
            }
        }
        out
    }
}

/// A variable of a component, with its attributes and characteristics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariableEntry {
    /// The name (`HeartbeatInterval`).
    pub name: String,
    /// The instance, when the name has several (`MessageAttempts` of `TransactionEvent`).
    pub instance: Option<String>,
    /// Its attributes, Actual first.
    pub attributes: Vec<Attribute>,
    /// What its values must be.
    pub characteristics: Characteristics,
    /// A change takes effect only after a reboot: SetVariables answers `RebootRequired`.
    pub reboot_required: bool,
}

impl VariableEntry {
    /// A variable with one Actual attribute of `mutability` and value `value`.
    pub fn new(
        name: &str,
        characteristics: Characteristics,
        mutability: Mutability,
        value: Option<&str>,
    ) -> Self {
        VariableEntry {
            name: name.to_owned(),
            instance: None,
            attributes: vec![Attribute::new(AttributeType::Actual, mutability, value)],
            characteristics,
            reboot_required: false,
        }
    }

    /// With an instance.
    #[must_use]
    pub fn instance(mut self, instance: &str) -> Self {
        self.instance = Some(instance.to_owned());
        self
    }

    /// With another attribute (e.g. MaxSet of `Power`).
    #[must_use]
    pub fn with(mut self, attribute: Attribute) -> Self {
        self.attributes.retain(|a| a.kind != attribute.kind);
        self.attributes.push(attribute);
        self
    }

    /// Its Actual attribute constant (never changes: a model name, a count of connectors).
    #[must_use]
    pub fn constant(mut self) -> Self {
        for attribute in &mut self.attributes {
            attribute.constant = true;
        }
        self
    }

    /// A change takes effect after a reboot.
    #[must_use]
    pub fn needs_reboot(mut self) -> Self {
        self.reboot_required = true;
        self
    }

    /// Its attribute of `kind`.
    pub fn attribute(&self, kind: AttributeType) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.kind == kind)
    }

    /// The wire variable.
    pub fn to_v2_0_1(&self) -> m::Variable {
        let mut out = m::Variable::new(self.name.clone());
        out.instance = self.instance.clone();
        out
    }
}

/// A component and its variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentEntry {
    /// Which component.
    pub id: ComponentId,
    /// Its variables.
    pub variables: Vec<VariableEntry>,
}

/// The answer to reading one attribute (`GetVariableStatusEnumType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GetStatus {
    /// Read.
    Accepted,
    /// Not readable (WriteOnly).
    Rejected,
    /// No such component.
    UnknownComponent,
    /// No such variable of the component.
    UnknownVariable,
    /// The variable has no attribute of that type.
    NotSupportedAttributeType,
}

/// The answer to setting one attribute (`SetVariableStatusEnumType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SetStatus {
    /// Set.
    Accepted,
    /// Not set: read-only, constant, or a value that does not fit (the reason says which).
    Rejected,
    /// No such component.
    UnknownComponent,
    /// No such variable of the component.
    UnknownVariable,
    /// The variable has no attribute of that type.
    NotSupportedAttributeType,
    /// Set; it takes effect after a reboot.
    RebootRequired,
}

impl SetStatus {
    /// The 2.0.1 wire status.
    pub fn to_v2_0_1(self) -> m::SetVariableStatusEnum {
        match self {
            SetStatus::Accepted => m::SetVariableStatusEnum::Accepted,
            SetStatus::Rejected => m::SetVariableStatusEnum::Rejected,
            SetStatus::UnknownComponent => m::SetVariableStatusEnum::UnknownComponent,
            SetStatus::UnknownVariable => m::SetVariableStatusEnum::UnknownVariable,
            SetStatus::NotSupportedAttributeType => {
                m::SetVariableStatusEnum::NotSupportedAttributeType
            }
            SetStatus::RebootRequired => m::SetVariableStatusEnum::RebootRequired,
        }
    }

    /// Whether the value was set.
    pub fn is_set(self) -> bool {
        matches!(self, SetStatus::Accepted | SetStatus::RebootRequired)
    }
}

impl GetStatus {
    /// The 2.0.1 wire status.
    pub fn to_v2_0_1(self) -> m::GetVariableStatusEnum {
        match self {
            GetStatus::Accepted => m::GetVariableStatusEnum::Accepted,
            GetStatus::Rejected => m::GetVariableStatusEnum::Rejected,
            GetStatus::UnknownComponent => m::GetVariableStatusEnum::UnknownComponent,
            GetStatus::UnknownVariable => m::GetVariableStatusEnum::UnknownVariable,
            GetStatus::NotSupportedAttributeType => {
                m::GetVariableStatusEnum::NotSupportedAttributeType
            }
        }
    }
}

/// What setting one attribute came to: its status, why it was refused, and the change made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetOutcome {
    /// The status.
    pub status: SetStatus,
    /// Why a value was Rejected.
    pub error: Option<ValueError>,
    /// The change, when the value was set.
    pub change: Option<Change>,
}

impl SetOutcome {
    fn refused(status: SetStatus) -> Self {
        SetOutcome {
            status,
            error: None,
            change: None,
        }
    }
}

/// A value the central system set: a 2.x variable's attribute or a 1.6 key.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// A 2.x variable (SetVariables).
    Variable {
        /// The component.
        component: ComponentId,
        /// The variable's name.
        variable: String,
        /// The variable's instance.
        instance: Option<String>,
        /// The attribute.
        attribute: AttributeType,
        /// The new value.
        value: String,
    },
    /// A 1.6 key (ChangeConfiguration).
    Key {
        /// The key.
        key: String,
        /// The new value.
        value: String,
    },
}

impl Change {
    /// The setting, when it is one [`Setting`](crate::Setting) names (a 1.6 key or its 2.x
    /// variable, the Actual attribute).
    ///
    /// ```
    /// use ocpp_model::device_model::Change;
    /// use ocpp_model::Setting;
    /// let change = Change::Key { key: "HeartbeatInterval".into(), value: "30".into() };
    /// assert_eq!(change.setting(), Some(Setting::HeartbeatInterval));
    /// ```
    pub fn setting(&self) -> Option<crate::Setting> {
        match self {
            Change::Key { key, .. } => crate::Setting::from_wire(key),
            Change::Variable {
                component,
                variable,
                instance: None,
                attribute: AttributeType::Actual,
                ..
            } if component.instance.is_none() && component.evse.is_none() => {
                crate::Setting::from_component_variable(&component.name, variable)
            }
            Change::Variable { .. } => None,
        }
    }

    /// The new value.
    pub fn value(&self) -> &str {
        match self {
            Change::Variable { value, .. } | Change::Key { value, .. } => value,
        }
    }

    /// The heartbeat interval this change sets (1.6 `HeartbeatInterval`, 2.x
    /// `OCPPCommCtrlr.HeartbeatInterval`), in seconds.
    ///
    /// ```
    /// use ocpp_model::device_model::Change;
    /// let change = Change::Key { key: "HeartbeatInterval".into(), value: "30".into() };
    /// assert_eq!(change.heartbeat_interval(), Some(30));
    /// ```
    pub fn heartbeat_interval(&self) -> Option<u64> {
        match self.setting() {
            Some(crate::Setting::HeartbeatInterval) => self.value().trim().parse().ok(),
            _ => None,
        }
    }
}

/// The 2.x device model of a station: its components and their variables.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeviceModel {
    components: Vec<ComponentEntry>,
}

impl DeviceModel {
    /// An empty model.
    pub fn new() -> Self {
        DeviceModel::default()
    }

    /// The standard [`catalogue`] for a station laid out as `layout`.
    pub fn standard(layout: catalogue::Layout) -> Self {
        DeviceModel {
            components: catalogue::standard(&layout),
        }
    }

    /// Adds a variable to a component (the component is added when new; a variable of the same
    /// name and instance is replaced): custom components and variables.
    ///
    /// ```
    /// use ocpp_model::device_model::{
    ///     Characteristics, ComponentId, DataType, DeviceModel, Mutability, VariableEntry,
    /// };
    /// let mut model = DeviceModel::new();
    /// let fan = Characteristics::new(DataType::Integer).unit("Percent").min(0).max(100);
    /// model.insert(
    ///     ComponentId::new("AcmeFan"),
    ///     VariableEntry::new("Speed", fan, Mutability::ReadWrite, Some("50")),
    /// );
    /// assert_eq!(model.value("AcmeFan", "Speed").as_deref(), Some("50"));
    /// ```
    pub fn insert(&mut self, component: ComponentId, variable: VariableEntry) {
        let index = match self.components.iter().position(|c| c.id == component) {
            Some(index) => index,
            None => {
                self.components.push(ComponentEntry {
                    id: component,
                    variables: Vec::new(),
                });
                self.components.len() - 1
            }
        };
        let variables = &mut self.components[index].variables;
        variables.retain(|v| !(v.name == variable.name && v.instance == variable.instance));
        variables.push(variable);
    }

    /// Every component, in order.
    pub fn components(&self) -> &[ComponentEntry] {
        &self.components
    }

    /// The variable `variable` (instance `variable_instance`) of `component`, or why not.
    ///
    /// # Errors
    /// [`GetStatus::UnknownComponent`] or [`GetStatus::UnknownVariable`].
    pub fn variable(
        &self,
        component: &ComponentId,
        variable: &str,
        variable_instance: Option<&str>,
    ) -> Result<&VariableEntry, GetStatus> {
        let entry = self
            .components
            .iter()
            .find(|c| &c.id == component)
            .ok_or(GetStatus::UnknownComponent)?;
        entry
            .variables
            .iter()
            .find(|v| v.name == variable && v.instance.as_deref() == variable_instance)
            .ok_or(GetStatus::UnknownVariable)
    }

    /// The Actual value of a variable of a station-wide component without instances (`None`:
    /// unknown, or no value).
    pub fn value(&self, component: &str, variable: &str) -> Option<String> {
        self.read(
            &ComponentId::new(component),
            variable,
            None,
            AttributeType::Actual,
        )
        .ok()
        .flatten()
    }

    /// Reads one attribute as GetVariables does (OCPP 2.0.1 B06): its value (`None`: no value)
    /// or why not.
    ///
    /// # Errors
    /// [`GetStatus`]: unknown, not that attribute, or WriteOnly (`Rejected`).
    pub fn read(
        &self,
        component: &ComponentId,
        variable: &str,
        variable_instance: Option<&str>,
        attribute: AttributeType,
    ) -> Result<Option<String>, GetStatus> {
        let entry = self.variable(component, variable, variable_instance)?;
        let attribute = entry
            .attribute(attribute)
            .ok_or(GetStatus::NotSupportedAttributeType)?;
        match attribute.mutability {
            Mutability::WriteOnly => Err(GetStatus::Rejected),
            _ => Ok(attribute.value.clone()),
        }
    }

    /// Sets one attribute as SetVariables does (OCPP 2.0.1 B05): unknown component or variable,
    /// an attribute the variable lacks, a read-only or constant attribute, a value that does not
    /// fit the characteristics: refused and nothing changes; otherwise set, `RebootRequired`
    /// when the variable says so.
    pub fn set(
        &mut self,
        component: &str,
        component_instance: Option<&str>,
        variable: &str,
        variable_instance: Option<&str>,
        attribute: AttributeType,
        value: &str,
    ) -> SetOutcome {
        let mut id = ComponentId::new(component);
        id.instance = component_instance.map(str::to_owned);
        self.set_at(&id, variable, variable_instance, attribute, value)
    }

    /// [`DeviceModel::set`] of a component given whole (with its EVSE and connector).
    pub fn set_at(
        &mut self,
        component: &ComponentId,
        variable: &str,
        variable_instance: Option<&str>,
        attribute: AttributeType,
        value: &str,
    ) -> SetOutcome {
        let Some(entry) = self.components.iter_mut().find(|c| &c.id == component) else {
            return SetOutcome::refused(SetStatus::UnknownComponent);
        };
        let Some(var) = entry
            .variables
            .iter_mut()
            .find(|v| v.name == variable && v.instance.as_deref() == variable_instance)
        else {
            return SetOutcome::refused(SetStatus::UnknownVariable);
        };
        let reboot = var.reboot_required;
        let checked = var.characteristics.check(value);
        let Some(slot) = var.attributes.iter_mut().find(|a| a.kind == attribute) else {
            return SetOutcome::refused(SetStatus::NotSupportedAttributeType);
        };
        let error = if slot.mutability == Mutability::ReadOnly || slot.constant {
            Some(ValueError::ReadOnly)
        } else {
            checked.err()
        };
        if let Some(error) = error {
            return SetOutcome {
                status: SetStatus::Rejected,
                error: Some(error),
                change: None,
            };
        }
        slot.value = Some(value.to_owned());
        SetOutcome {
            status: if reboot {
                SetStatus::RebootRequired
            } else {
                SetStatus::Accepted
            },
            error: None,
            change: Some(Change::Variable {
                component: component.clone(),
                variable: variable.to_owned(),
                instance: variable_instance.map(str::to_owned),
                attribute,
                value: value.to_owned(),
            }),
        }
    }

    /// Sets a value the station itself knows (a ReadOnly one included: the clock, an
    /// availability state), without checks or a [`Change`]; `false` when there is no such
    /// attribute.
    pub fn update(
        &mut self,
        component: &ComponentId,
        variable: &str,
        attribute: AttributeType,
        value: &str,
    ) -> bool {
        let slot = self
            .components
            .iter_mut()
            .filter(|c| &c.id == component)
            .flat_map(|c| c.variables.iter_mut())
            .filter(|v| v.name == variable)
            .flat_map(|v| v.attributes.iter_mut())
            .find(|a| a.kind == attribute);
        match slot {
            Some(slot) => {
                slot.value = Some(value.to_owned());
                true
            }
            None => false,
        }
    }

    /// Answers a GetVariables (OCPP 2.0.1 B06): one result per asked attribute, in order.
    pub fn get_variables(&self, request: &m::GetVariablesRequest) -> m::GetVariablesResponse {
        let results = request
            .get_variable_data
            .iter()
            .map(|asked| {
                let read = match attribute_of(&asked.attribute_type) {
                    Some(kind) => self.read(
                        &ComponentId::of(&asked.component),
                        &asked.variable.name,
                        asked.variable.instance.as_deref(),
                        kind,
                    ),
                    None => Err(GetStatus::NotSupportedAttributeType),
                };
                let status = read.as_ref().map_or_else(|s| *s, |_| GetStatus::Accepted);
                let mut result = m::GetVariableResult::new(
                    status.to_v2_0_1(),
                    asked.component.clone(),
                    asked.variable.clone(),
                );
                result.attribute_type = asked.attribute_type.clone();
                result.attribute_value = read.ok().flatten();
                result
            })
            .collect();
        m::GetVariablesResponse::new(results)
    }

    /// `DeviceDataCtrlr.ConfigurationValueSize`: the longest value a SetVariables may set.
    fn configuration_value_size(&self) -> Option<usize> {
        let id = ComponentId::new(catalogue::DEVICE_DATA_CTRLR);
        self.read(&id, "ConfigurationValueSize", None, AttributeType::Actual)
            .ok()
            .flatten()
            .and_then(|v| v.parse().ok())
    }

    /// Answers a SetVariables (OCPP 2.0.1 B05): one result per item, in order (a value longer
    /// than `DeviceDataCtrlr.ConfigurationValueSize` Rejected), and the changes made. The caller keeps the persistent ones before it sends the answer.
    pub fn set_variables(
        &mut self,
        request: &m::SetVariablesRequest,
    ) -> (m::SetVariablesResponse, Vec<Change>) {
        let mut changes = Vec::new();
        let value_size = self.configuration_value_size();
        let results = request
            .set_variable_data
            .iter()
            .map(|asked| {
                let too_long = value_size.is_some_and(|max| asked.attribute_value.len() > max);
                let outcome = match attribute_of(&asked.attribute_type) {
                    // Longer than DeviceDataCtrlr.ConfigurationValueSize: Rejected.
                    Some(_) if too_long => SetOutcome {
                        status: SetStatus::Rejected,
                        error: Some(ValueError::TooLarge),
                        change: None,
                    },
                    Some(kind) => self.set_at(
                        &ComponentId::of(&asked.component),
                        &asked.variable.name,
                        asked.variable.instance.as_deref(),
                        kind,
                        &asked.attribute_value,
                    ),
                    None => SetOutcome::refused(SetStatus::NotSupportedAttributeType),
                };
                let mut result = m::SetVariableResult::new(
                    outcome.status.to_v2_0_1(),
                    asked.component.clone(),
                    asked.variable.clone(),
                );
                result.attribute_type = asked.attribute_type.clone();
                if let Some(error) = &outcome.error {
                    let mut info = m::StatusInfo::new(error.reason_code());
                    info.additional_info = Some(error.to_string());
                    result.attribute_status_info = Some(info);
                }
                changes.extend(outcome.change);
                result
            })
            .collect();
        (m::SetVariablesResponse::new(results), changes)
    }

    /// The values that survive a reboot: every persistent, writable attribute that has a value,
    /// by a stable name (`Component[instance]@evse.connector/Variable[instance]/Attribute`).
    pub fn persistent_values(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for component in &self.components {
            for variable in &component.variables {
                for attribute in &variable.attributes {
                    let writable = attribute.mutability != Mutability::ReadOnly;
                    if let (true, true, Some(value)) =
                        (attribute.persistent, writable, &attribute.value)
                    {
                        out.push((path(&component.id, variable, attribute.kind), value.clone()));
                    }
                }
            }
        }
        out
    }

    /// Restores a value [`DeviceModel::persistent_values`] gave; `false` (and nothing changes)
    /// when the attribute is no longer in the model, is not persistent and writable, or the value
    /// no longer fits.
    pub fn restore(&mut self, name: &str, value: &str) -> bool {
        for component in &mut self.components {
            for variable in &mut component.variables {
                let fits = variable.characteristics.check(value).is_ok();
                for attribute in &mut variable.attributes {
                    if path(
                        &component.id,
                        variable_ref(&variable.name, &variable.instance),
                        attribute.kind,
                    ) == name
                    {
                        let writable = attribute.mutability != Mutability::ReadOnly;
                        if !(fits && writable && attribute.persistent) {
                            return false;
                        }
                        attribute.value = Some(value.to_owned());
                        return true;
                    }
                }
            }
        }
        false
    }
}

/// The attribute a request names (none: Actual; `None`: one this version does not define).
fn attribute_of(asked: &Option<m::AttributeEnum>) -> Option<AttributeType> {
    match asked {
        None => Some(AttributeType::Actual),
        Some(kind) => AttributeType::from_v2_0_1(kind),
    }
}

/// What [`path`] needs of a variable.
struct VariableRef<'a> {
    name: &'a str,
    instance: Option<&'a str>,
}

fn variable_ref<'a>(name: &'a str, instance: &'a Option<String>) -> VariableRef<'a> {
    VariableRef {
        name,
        instance: instance.as_deref(),
    }
}

impl<'a> From<&'a VariableEntry> for VariableRef<'a> {
    fn from(v: &'a VariableEntry) -> Self {
        variable_ref(&v.name, &v.instance)
    }
}

/// The stable name of one attribute.
fn path<'a>(
    component: &ComponentId,
    variable: impl Into<VariableRef<'a>>,
    kind: AttributeType,
) -> String {
    let variable = variable.into();
    let mut out = component.path();
    out.push('/');
    out.push_str(variable.name);
    if let Some(instance) = variable.instance {
        out.push_str(&format!("[{instance}]"));
    }
    out.push('/');
    out.push_str(kind.as_str());
    out
}

#[cfg(test)]
mod tests;
