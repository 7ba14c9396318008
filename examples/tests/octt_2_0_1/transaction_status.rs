//! Block E, GetTransactionStatus: ongoing without messages, without a transaction id.

use super::*;

/// TC_E_30_CSMS, Check Transaction status - Transaction with id ongoing - without message in
/// queue: GetTransactionStatus with the transactionId; the answer reaches the operator.
pub(crate) fn tc_e_30_check_transaction_status_ongoing_without_messages(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CS-E30");
    let started = event(
        "Started",
        "Authorized",
        0,
        "TX-E30",
        json!({}),
        json!({"idToken": id_token("TAG-OK")}),
    );
    ws.result("TransactionEvent", started);
    let body = json!({"transactionId": "TX-E30"});
    let answer = json!({"ongoingIndicator": true, "messagesInQueue": false});
    command(
        &server,
        &mut ws,
        "CS-E30",
        "GetTransactionStatus",
        body.clone(),
        Answer::Result(answer.clone()),
    )
    .assert_result(&body, &answer);
    ws.close();
}

/// TC_E_34_CSMS, Check Transaction status - Without transactionId - without message in queue.
pub(crate) fn tc_e_34_check_transaction_status_without_transaction_id(binary: &str) {
    let answer = json!({"messagesInQueue": false});
    simple_command(binary, "GetTransactionStatus", json!({}), answer);
}
