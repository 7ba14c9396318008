use std::sync::Arc;

use ocpp_messages::{v2_0_1, DateTime};
use ocpp_model::{Recorded, StationEvent, TransactionId, TransactionLedger};

use super::SqlLedger;
use crate::store::tests::{temp_database, Busy};
use crate::store::{SqlStore, Store, StoreError};

/// The trait's contract: a call that returns `Err` records nothing, then or later. A 2.x
/// start that waited past its database wait behind another job is refused, and the store's
/// thread, free again, does not write it after all: the start sent again is new.
#[test]
fn a_start_refused_while_the_database_is_busy_is_never_recorded() {
    let (dir, url) = temp_database("ledger-busy");
    let store = Arc::new(SqlStore::open(&url).unwrap());
    let ledger = SqlLedger::new(Arc::clone(&store));
    let event = v2_0_1::TransactionEventRequest::new(
        v2_0_1::TransactionEventEnum::Started,
        DateTime::from_unix_timestamp(1_735_787_040).unwrap(),
        v2_0_1::TriggerReasonEnum::Authorized,
        0,
        v2_0_1::Transaction::new("TX-1"),
    )
    .with_evse(v2_0_1::EVSE::new(1).with_connector_id(1));
    let StationEvent::TransactionStarted(start) = StationEvent::from_request(&event.into()) else {
        panic!("a TransactionEvent Started is a start")
    };
    let busy = Busy::start(&store);
    let refused = ledger.record_start("CP1", &start);
    assert!(
        matches!(refused, Err(StoreError::Unavailable)),
        "{refused:?}"
    );
    busy.release();
    store.flush();
    let id = TransactionId::Text("TX-1".into());
    assert_eq!(ledger.transaction("CP1", &id).unwrap(), None);
    assert_eq!(
        ledger.record_start("CP1", &start).unwrap(),
        Recorded::New(id)
    );
    drop((ledger, store));
    let _ = std::fs::remove_dir_all(&dir);
}
