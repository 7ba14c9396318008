//! Reports of the device model (OCPP 2.0.1 B07 "Get Base Report", B08 "Get Custom Report"):
//! what a report holds, and the NotifyReport CALLs that carry it, `DeviceDataCtrlr.ItemsPerMessage`
//! items each, numbered by `seqNo` from 0, each but the last with `tbc` (to be continued).

use ocpp_messages::v2_0_1 as m;
use ocpp_messages::DateTime;

use super::{ComponentEntry, ComponentId, DeviceModel, Mutability, VariableEntry};

/// A variable that a summary names: the availability and problem state of the station, its
/// EVSEs and connectors (`SummaryInventory`).
const SUMMARY: &[&str] = &["AvailabilityState", "Available", "Problem"];

/// Which base report (`ReportBaseEnumType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReportBase {
    /// Every variable the central system may set.
    ConfigurationInventory,
    /// Every variable.
    FullInventory,
    /// The availability of the station, its EVSEs and connectors.
    SummaryInventory,
}

impl ReportBase {
    /// Of the 2.0.1 wire type (`None`: a value this version does not define).
    pub fn from_v2_0_1(base: &m::ReportBaseEnum) -> Option<ReportBase> {
        match base {
            m::ReportBaseEnum::ConfigurationInventory => Some(ReportBase::ConfigurationInventory),
            m::ReportBaseEnum::FullInventory => Some(ReportBase::FullInventory),
            m::ReportBaseEnum::SummaryInventory => Some(ReportBase::SummaryInventory),
            _ => None,
        }
    }
}

fn report_data(component: &ComponentId, variable: &VariableEntry) -> m::ReportData {
    let attributes = variable.attributes.iter().map(|a| a.to_v2_0_1()).collect();
    let mut data = m::ReportData::new(component.to_v2_0_1(), variable.to_v2_0_1(), attributes);
    data.variable_characteristics = Some(variable.characteristics.to_v2_0_1());
    data
}

impl DeviceModel {
    /// The items of a base report, in the model's order.
    ///
    /// ```
    /// use ocpp_model::device_model::report::ReportBase;
    /// use ocpp_model::device_model::{catalogue, DeviceModel};
    /// let model = DeviceModel::standard(catalogue::Layout::new(&[1]));
    /// let full = model.base_report(ReportBase::FullInventory);
    /// let settings = model.base_report(ReportBase::ConfigurationInventory);
    /// assert!(settings.len() < full.len());
    /// ```
    pub fn base_report(&self, base: ReportBase) -> Vec<m::ReportData> {
        self.report_where(|_, variable| match base {
            ReportBase::FullInventory => true,
            ReportBase::ConfigurationInventory => variable
                .attributes
                .iter()
                .any(|a| a.mutability != Mutability::ReadOnly && !a.constant),
            ReportBase::SummaryInventory => SUMMARY.contains(&variable.name.as_str()),
        })
    }

    /// The items of a GetReport (OCPP 2.0.1 B08): the variables named by `componentVariable`
    /// (a component without a variable: all its variables; a component without EVSE: that
    /// component at every EVSE), of components that meet every `componentCriteria` (their
    /// `Active`, `Available`, `Enabled` or `Problem` variable is `true`).
    pub fn custom_report(&self, request: &m::GetReportRequest) -> Vec<m::ReportData> {
        let wanted = request.component_variable.as_deref().unwrap_or_default();
        let criteria = request.component_criteria.as_deref().unwrap_or_default();
        let meets = |component: &ComponentEntry| {
            criteria.iter().all(|criterion| {
                let name = match criterion {
                    m::ComponentCriterionEnum::Active => "Active",
                    m::ComponentCriterionEnum::Available => "Available",
                    m::ComponentCriterionEnum::Enabled => "Enabled",
                    m::ComponentCriterionEnum::Problem => "Problem",
                    _ => return false,
                };
                component.variables.iter().any(|v| {
                    v.name == name
                        && v.attribute(super::AttributeType::Actual)
                            .and_then(|a| a.value.as_deref())
                            == Some("true")
                })
            })
        };
        let mut out = Vec::new();
        for component in &self.components {
            if !meets(component) {
                continue;
            }
            for variable in &component.variables {
                let named = wanted.is_empty()
                    || wanted.iter().any(|cv| {
                        let c = &cv.component;
                        c.name == component.id.name
                            && (c.instance.is_none() || c.instance == component.id.instance)
                            && c.evse.as_ref().is_none_or(|e| {
                                Some(e.id) == component.id.evse
                                    && (e.connector_id.is_none()
                                        || e.connector_id == component.id.connector)
                            })
                            && cv.variable.as_ref().is_none_or(|v| {
                                v.name == variable.name
                                    && (v.instance.is_none() || v.instance == variable.instance)
                            })
                    });
                if named {
                    out.push(report_data(&component.id, variable));
                }
            }
        }
        out
    }

    fn report_where(
        &self,
        keep: impl Fn(&ComponentId, &VariableEntry) -> bool,
    ) -> Vec<m::ReportData> {
        self.components
            .iter()
            .flat_map(|c| c.variables.iter().map(move |v| (&c.id, v)))
            .filter(|(c, v)| keep(c, v))
            .map(|(c, v)| report_data(c, v))
            .collect()
    }
}

/// The NotifyReport CALLs that carry `items` for the report `request_id`: at most `per_message`
/// items each (at least one), `seqNo` 0, 1, 2..., `tbc` on each but the last. No items: one
/// NotifyReport without `reportData`.
///
/// ```
/// use ocpp_model::device_model::report::{notify_reports, ReportBase};
/// use ocpp_model::device_model::{catalogue, DeviceModel};
/// use ocpp_messages::DateTime;
/// let model = DeviceModel::standard(catalogue::Layout::new(&[1]));
/// let items = model.base_report(ReportBase::FullInventory);
/// let calls = notify_reports(7, DateTime::now(), items.clone(), 10);
/// assert_eq!(calls.len(), items.len().div_ceil(10));
/// assert_eq!(calls[0].seq_no, 0);
/// assert_eq!(calls[0].tbc, Some(true));
/// assert_eq!(calls.last().unwrap().tbc, Some(false));
/// ```
pub fn notify_reports(
    request_id: i32,
    generated_at: DateTime,
    items: Vec<m::ReportData>,
    per_message: usize,
) -> Vec<m::NotifyReportRequest> {
    let per_message = per_message.max(1);
    let mut chunks: Vec<Vec<m::ReportData>> = Vec::new();
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        chunks.push(items.by_ref().take(per_message).collect());
    }
    if chunks.is_empty() {
        let mut only = m::NotifyReportRequest::new(request_id, generated_at, 0);
        only.tbc = Some(false);
        return vec![only];
    }
    let last = chunks.len() - 1;
    chunks
        .into_iter()
        .enumerate()
        .map(|(index, chunk)| {
            let seq_no = i32::try_from(index).unwrap_or(i32::MAX);
            let mut call = m::NotifyReportRequest::new(request_id, generated_at.clone(), seq_no);
            call.report_data = Some(chunk);
            call.tbc = Some(index != last);
            call
        })
        .collect()
}
