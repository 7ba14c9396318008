//! The inbox subscription: pub/sub on one Redis or a Sentinel service's master, sharded pub/sub
//! on Redis Cluster.

use futures_util::StreamExt;
use redis::cluster_async::ClusterConnection;
use redis::{ErrorKind, PushInfo, PushKind, RedisError, RedisResult, Value};
use tokio::sync::mpsc;

use super::{MasterMoved, RedisLink};

/// The message a node publishes to its own inbox on Redis Cluster to check that it is
/// subscribed where `SPUBLISH` counts it (PROTOCOL.md 3); every node ignores it.
pub(crate) const INBOX_PING: &str = r#"{"type":"ping"}"#;

/// A node's inbox subscription: a pub/sub connection (one Redis, Sentinel), or a Redis Cluster
/// connection that takes sharded pub/sub messages (`SSUBSCRIBE`) at the master of the inbox's
/// slot.
pub(crate) enum Inbox {
    /// `SUBSCRIBE` on one Redis.
    PubSub {
        sink: redis::aio::PubSubSink,
        stream: redis::aio::PubSubStream,
    },
    /// `SSUBSCRIBE` on Redis Cluster; the messages come through `pushes`.
    Sharded {
        connection: ClusterConnection,
        pushes: mpsc::UnboundedReceiver<PushInfo>,
        channel: Option<String>,
    },
}

impl Inbox {
    /// Subscribes to `channel` (`SUBSCRIBE`, or `SSUBSCRIBE` on Redis Cluster).
    pub(crate) async fn subscribe(&mut self, channel: &str) -> RedisResult<()> {
        match self {
            Inbox::PubSub { sink, .. } => sink.subscribe(channel).await,
            Inbox::Sharded {
                connection,
                channel: subscribed,
                ..
            } => {
                if let Err(e) = connection.ssubscribe(channel).await {
                    if e.to_string()
                        .to_ascii_lowercase()
                        .contains("unknown command")
                    {
                        // Not a failure that passes: say what it is at each attempt.
                        tracing::error!(
                            error = %e,
                            "this Redis Cluster has no sharded pub/sub (SSUBSCRIBE): \
                             ocpp-cluster needs Redis 7 or later on a cluster"
                        );
                    }
                    return Err(e);
                }
                *subscribed = Some(channel.to_owned());
                Ok(())
            }
        }
    }

    /// The next message's payload; `None` once the connection is gone.
    pub(crate) async fn next(&mut self) -> Option<Vec<u8>> {
        match self {
            Inbox::PubSub { stream, .. } => stream
                .next()
                .await
                .map(|message| message.get_payload_bytes().to_vec()),
            Inbox::Sharded { pushes, .. } => loop {
                let push = pushes.recv().await?;
                if push.kind != PushKind::SMessage {
                    continue;
                }
                if let Some(Value::BulkString(payload)) = push.data.into_iter().nth(1) {
                    return Some(payload);
                }
            },
        }
    }

    /// What checks that this subscription still works ([`Pinger::ping`]), apart from the
    /// inbox, so that its messages keep flowing while a ping waits for its answer.
    pub(crate) fn pinger(&self) -> Pinger {
        match self {
            Inbox::PubSub { sink, .. } => Pinger::PubSub(sink.clone()),
            Inbox::Sharded {
                connection,
                channel,
                ..
            } => Pinger::Sharded {
                connection: connection.clone(),
                channel: channel.clone(),
            },
        }
    }
}

/// The ping of an [`Inbox`] ([`Inbox::pinger`]).
pub(crate) enum Pinger {
    /// `PING` on the pub/sub connection.
    PubSub(redis::aio::PubSubSink),
    /// [`INBOX_PING`] published to the inbox itself.
    Sharded {
        connection: ClusterConnection,
        channel: Option<String>,
    },
}

impl Pinger {
    /// Checks that the subscription still works: `PING` on the pub/sub connection; on Redis
    /// Cluster, [`INBOX_PING`] published to the inbox itself, which the master of its slot must
    /// count as read (the cluster connection subscribes again by itself after a disconnection
    /// or a failover; meanwhile this fails).
    pub(crate) async fn ping(self) -> RedisResult<()> {
        match self {
            Pinger::PubSub(mut sink) => sink.ping::<Value>().await.map(drop),
            Pinger::Sharded {
                mut connection,
                channel,
            } => {
                let Some(channel) = channel else {
                    return Err(RedisError::from((ErrorKind::Client, "not subscribed")));
                };
                let readers: i64 = redis::cmd("SPUBLISH")
                    .arg(channel)
                    .arg(INBOX_PING)
                    .query_async(&mut connection)
                    .await?;
                if readers == 0 {
                    return Err(RedisError::from((
                        ErrorKind::Client,
                        "the inbox's master does not count this node's subscription",
                    )));
                }
                Ok(())
            }
        }
    }
}

impl RedisLink {
    /// A new inbox connection to the master in use (not subscribed yet: [`Inbox::subscribe`]),
    /// and what fires when the link moves to another one (the subscription should follow).
    pub(crate) async fn inbox(&self) -> RedisResult<(Inbox, MasterMoved)> {
        let pubsub = |pubsub: redis::aio::PubSub| {
            let (sink, stream) = pubsub.split();
            Inbox::PubSub { sink, stream }
        };
        match self {
            RedisLink::Direct { client, .. } => {
                Ok((pubsub(client.get_async_pubsub().await?), MasterMoved(None)))
            }
            RedisLink::Sentinel(link) => {
                let master = link.current().await?;
                let moved = MasterMoved(Some((link.master.subscribe(), Some(master.generation))));
                match master.client.get_async_pubsub().await {
                    Ok(connection) => Ok((pubsub(connection), moved)),
                    Err(e) => {
                        link.want();
                        Err(e)
                    }
                }
            }
            RedisLink::Cluster {
                client, settings, ..
            } => {
                let (pushes_in, pushes) = mpsc::unbounded_channel();
                let config = settings.clone().set_push_sender(pushes_in);
                let connection = client.get_async_connection_with_config(config).await?;
                let inbox = Inbox::Sharded {
                    connection,
                    pushes,
                    channel: None,
                };
                Ok((inbox, MasterMoved(None)))
            }
        }
    }
}
