use ocpp_tokio::model::{AuthorizationStatus::Accepted, *};
use ocpp_tokio::{server::ServerError, DateTime, ErrorAnswer, Reply, Router, Server, Session};

/// A connection, and the application's state: the transactions, which outlive it.
type Cp = Session<(), std::sync::Arc<InMemoryLedger>>;

/// Every energy register reading, exactly as the charge point wrote it.
fn meter(cp: &Cp, id: &TransactionId, readings: &[MeterReading]) {
    for r in readings.iter().filter(|r| r.measurand == "Energy.Active.Import.Register") {
        let value = r.value.map(|v| v.to_string()).unwrap_or_default();
        println!("{} meter {id} {value} {}", cp.identity(), r.unit);
    }
}

/// A transaction message's answer (the 1.6 id for a StartTransaction).
fn transaction(transaction_id: Option<i32>) -> Reply<EventAnswer> {
    Ok(EventAnswer::transaction(transaction_id, Some(Authorization::new(Accepted))))
}

#[tokio::main]
async fn main() -> Result<(), ServerError> {
    let listen = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:9000".into());
    let router = Router::<()>::default()
        .with_state(std::sync::Arc::new(InMemoryLedger::new()))
        .on_concept(|_: Cp, _: Booted| async { Ok(BootAnswer::accepted(300, DateTime::now())) })
        .on_concept(|_: Cp, _: Heartbeat| async { Ok(EventAnswer::heartbeat(DateTime::now())) })
        .on_concept(|_: Cp, _: StatusChanged| async { Ok(EventAnswer::Received) })
        .on_concept(|_: Cp, _: AuthorizationRequested| async { Ok(Authorization::new(Accepted)) })
        .on_concept(|cp: Cp, start: TransactionStarted| async move {
            let recorded = cp
                .app()
                .record_start(cp.identity().as_str(), &start)
                .map_err(ErrorAnswer::internal)?;
            let id = recorded.id().cloned().unwrap_or(TransactionId::Number(0));
            println!("{} started {id}", cp.identity());
            meter(&cp, &id, &start.readings);
            transaction(recorded.number())
        })
        .on_concept(|cp: Cp, update: TransactionUpdated| async move {
            cp.app()
                .record_update(cp.identity().as_str(), &update)
                .map_err(ErrorAnswer::internal)?;
            meter(&cp, &update.id, &update.readings);
            Ok(EventAnswer::Received)
        })
        .on_concept(|cp: Cp, end: TransactionEnded| async move {
            cp.app().record_end(cp.identity().as_str(), &end).map_err(ErrorAnswer::internal)?;
            meter(&cp, &end.id, &end.readings);
            println!("{} ended {} {}", cp.identity(), end.id, end.reason);
            transaction(None)
        });
    // Every version this build knows is offered: 2.1, 2.0.1 and 1.6.
    let server = Server::builder().handler(router).bind(listen).await?;
    println!("listening on {}", server.local_addr()?);
    server.run().await
}
