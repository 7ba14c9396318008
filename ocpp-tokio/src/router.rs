//! The typed router: one async function per action, typed in and typed out, with the
//! connection's [`Session`] handed in (axum's handlers, Python `ocpp`'s `@on("Action")`).

use std::any::TypeId;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;

use ocpp_messages::action::ActionRequest;
use ocpp_messages::ErrorCode;
use ocpp_messages::{Request, Response};
use ocpp_model::{Command, Concept, Outcome, StationEvent};
use ocpp_proto::{Answer, Closed, ErrorAnswer, Rejection};

use crate::typed::ResponseOf;
use crate::{BoxFuture, Connecting, Handler, IncomingCall, Session};

/// What an action's handler returns: the action's response (a CALLRESULT), or a CALLERROR.
pub type Reply<T> = Result<T, ErrorAnswer>;

/// One action of one version: hands the request back when it is another version's.
type Route<S, A> =
    Box<dyn Fn(Session<S, A>, Request) -> Result<BoxFuture<Answer>, Request> + Send + Sync>;
type MakeState<S> = Box<dyn Fn(Connecting) -> BoxFuture<Result<S, Rejection>> + Send + Sync>;
type OnCall<S, A> = Box<dyn Fn(Session<S, A>, IncomingCall) -> BoxFuture<Answer> + Send + Sync>;
type OnSession<S, A> = Box<dyn Fn(Session<S, A>) -> BoxFuture<()> + Send + Sync>;
type OnSend<S, A> = Box<dyn Fn(Session<S, A>, IncomingCall) -> BoxFuture<()> + Send + Sync>;
type OnClose<S, A> = Box<dyn Fn(Session<S, A>, Closed) -> BoxFuture<()> + Send + Sync>;
/// Per action name, its routes (one per version's request type).
type Routes<S, A> = HashMap<&'static str, Vec<(TypeId, Route<S, A>)>>;
/// One concept of every version: hands the event back when it is another concept. The
/// future gives the answer with the event it answers (to make the version's response).
type ConceptRoute<S, A> = Box<
    dyn Fn(Session<S, A>, StationEvent) -> Result<BoxFuture<Answer>, StationEvent> + Send + Sync,
>;
/// Every command of the central system, of every version, to one handler (a station's).
type CommandRoute<S, A> = Box<dyn Fn(Session<S, A>, Command) -> BoxFuture<Answer> + Send + Sync>;

/// A [`Handler`] made of one async function per action: each takes the connection's
/// [`Session`] and the action's request type, and returns that action's response type or a
/// CALLERROR ([`Reply`]), so a wrong answer does not compile. OCPP 1.6 and 2.x payloads stay
/// distinct types: route each version's action to its own function, or route a concept of
/// every version to one function with [`Router::on_concept`] (a 1.6 StartTransaction and a
/// 2.x TransactionEvent `Started` are one `TransactionStarted`). A known action without a route gets `NotSupported` (or
/// what [`Router::fallback`] answers); an unknown one never reaches the router (the core
/// answers `NotImplemented`).
///
/// `S` is the state of one connection, made by the function given to [`Router::new`] when a
/// charge point connects (before any of its CALLs is handled), reached by every handler
/// through the session, and handed back to [`Router::on_close`]. `A` is the application's
/// state, given once with [`Router::with_state`] and reached through [`Session::app`] by
/// every connection's handlers (which state belongs where: [`Session`]).
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
/// use ocpp_tokio::{v1_6, v2_0_1, DateTime, Reply, Router, Session};
///
/// #[derive(Default)]
/// struct ConnectionState {
///     heartbeats: AtomicU32,
/// }
///
/// async fn heartbeat(s: Session<ConnectionState>, _: v1_6::HeartbeatRequest) -> Reply<v1_6::HeartbeatResponse> {
///     s.heartbeats.fetch_add(1, Relaxed);
///     Ok(v1_6::HeartbeatResponse::new(DateTime::now()))
/// }
///
/// async fn heartbeat_2(s: Session<ConnectionState>, _: v2_0_1::HeartbeatRequest) -> Reply<v2_0_1::HeartbeatResponse> {
///     s.heartbeats.fetch_add(1, Relaxed);
///     Ok(v2_0_1::HeartbeatResponse::new(DateTime::now()))
/// }
///
/// let router = Router::<ConnectionState>::default().on(heartbeat).on(heartbeat_2);
/// # let _ = router;
/// ```
///
/// A handler whose answer is not its action's response is refused at compile time:
///
/// ```compile_fail
/// use ocpp_tokio::{v1_6, DateTime, Reply, Router, Session};
///
/// async fn heartbeat(_: Session<()>, _: v1_6::HeartbeatRequest) -> Reply<v1_6::BootNotificationResponse> {
///     let accepted = v1_6::RegistrationStatus::Accepted;
///     Ok(v1_6::BootNotificationResponse::new(accepted, DateTime::now(), 300))
/// }
///
/// let router = Router::<()>::default().on(heartbeat);
/// ```
pub struct Router<S, A = ()> {
    make_state: MakeState<S>,
    app: A,
    routes: Routes<S, A>,
    concepts: Vec<(TypeId, ConceptRoute<S, A>)>,
    commands: Option<CommandRoute<S, A>>,
    fallback: Option<OnCall<S, A>>,
    on_connect: Option<OnSession<S, A>>,
    on_send: Option<OnSend<S, A>>,
    on_close: Option<OnClose<S, A>>,
}

impl<S, A> fmt::Debug for Router<S, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut actions: Vec<_> = self.routes.keys().collect();
        actions.sort();
        f.debug_struct("Router")
            .field("actions", &actions)
            .field("fallback", &self.fallback.is_some())
            .finish_non_exhaustive()
    }
}

/// A router that accepts every charge point with `S::default()` as its state.
impl<S: Default + Send + Sync + 'static> Default for Router<S> {
    fn default() -> Self {
        Router::new(|_| Ok(S::default()))
    }
}

impl<S: Send + Sync + 'static> Router<S> {
    /// A router for a charging station ([`StationBuilder::handler`](crate::station::StationBuilder::handler)
    /// takes the station's one state): no upgrade ever reaches a station, so there is no
    /// state to make per connection, and `S` need not be `Default`.
    ///
    /// ```
    /// use std::sync::atomic::AtomicU32;
    /// use ocpp_tokio::station::Station;
    /// use ocpp_tokio::Router;
    ///
    /// struct Connectors {
    ///     count: u32,
    ///     started: AtomicU32,
    /// }
    ///
    /// let state = Connectors { count: 2, started: AtomicU32::new(0) };
    /// let builder = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")
    ///     .unwrap()
    ///     .handler(Router::for_station(), state);
    /// # let _ = builder;
    /// ```
    pub fn for_station() -> Self {
        Router::new(|_| Err(Rejection::NOT_FOUND))
    }

    /// A router whose connections start from `make_state`: it sees the charge point
    /// connecting (identity, version, Basic credentials, client certificate) and returns its
    /// state, which accepts it, or a [`Rejection`] (401, 403, 404...), which refuses the
    /// upgrade. (To decide with I/O, a database lookup say, see [`Router::new_async`].)
    ///
    /// ```
    /// use ocpp_tokio::{Rejection, Router};
    ///
    /// struct ConnectionState {
    ///     identity: String,
    /// }
    ///
    /// let router = Router::new(|connecting| {
    ///     let identity = connecting.identity().as_str();
    ///     if !identity.starts_with("CP") {
    ///         return Err(Rejection::NOT_FOUND);
    ///     }
    ///     Ok(ConnectionState { identity: identity.to_owned() })
    /// });
    /// # let _ = router;
    /// ```
    pub fn new<F>(make_state: F) -> Self
    where
        F: Fn(Connecting) -> Result<S, Rejection> + Send + Sync + 'static,
    {
        Router::new_async(move |connecting| std::future::ready(make_state(connecting)))
    }

    /// [`Router::new`] with an async `make_state`, e.g. to look the charge point up in a
    /// database; it runs within the handshake deadline.
    ///
    /// ```
    /// use ocpp_tokio::{Connecting, Rejection, Router};
    ///
    /// async fn known(identity: &str) -> bool {
    ///     identity.starts_with("CP") // a database would be asked here
    /// }
    ///
    /// let router = Router::new_async(|connecting: Connecting| async move {
    ///     match known(connecting.identity().as_str()).await {
    ///         true => Ok(()),
    ///         false => Err(Rejection::NOT_FOUND),
    ///     }
    /// });
    /// # let _ = router;
    /// ```
    pub fn new_async<F, Fut>(make_state: F) -> Self
    where
        F: Fn(Connecting) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<S, Rejection>> + Send + 'static,
    {
        Router {
            make_state: Box::new(move |connecting| Box::pin(make_state(connecting))),
            app: (),
            routes: HashMap::new(),
            concepts: Vec::new(),
            commands: None,
            fallback: None,
            on_connect: None,
            on_send: None,
            on_close: None,
        }
    }

    /// Gives every handler of every connection the application-wide state `app` (the
    /// token list, a database pool, the configuration: what is not one connection's), through
    /// [`Session::app`], as axum's `Router::with_state`. Share what changes behind an `Arc`
    /// (`A` is cloned for each CALL); handlers routed before this call do not see it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ocpp_tokio::{v1_6, DateTime, Reply, Router, Session};
    ///
    /// struct App {
    ///     heartbeat_interval: i32,
    /// }
    ///
    /// async fn boot(
    ///     s: Session<(), Arc<App>>,
    ///     _: v1_6::BootNotificationRequest,
    /// ) -> Reply<v1_6::BootNotificationResponse> {
    ///     let accepted = v1_6::RegistrationStatus::Accepted;
    ///     let interval = s.app().heartbeat_interval;
    ///     Ok(v1_6::BootNotificationResponse::new(accepted, DateTime::now(), interval))
    /// }
    ///
    /// let app = Arc::new(App { heartbeat_interval: 300 });
    /// let router = Router::<()>::default().with_state(app).on(boot);
    /// # let _ = router;
    /// ```
    #[allow(clippy::result_large_err)] // a concept's route hands its event back by value
    pub fn with_state<B>(self, app: B) -> Router<S, B>
    where
        B: Clone + Send + Sync + 'static,
    {
        let routes = self
            .routes
            .into_iter()
            .map(|(name, routes)| {
                let routes = routes
                    .into_iter()
                    .map(|(id, route)| {
                        let route: Route<S, B> =
                            Box::new(move |session, request| route(session.without_app(), request));
                        (id, route)
                    })
                    .collect();
                (name, routes)
            })
            .collect();
        let concepts = self
            .concepts
            .into_iter()
            .map(|(id, route)| {
                let route: ConceptRoute<S, B> =
                    Box::new(move |session, event| route(session.without_app(), event));
                (id, route)
            })
            .collect();
        Router {
            make_state: self.make_state,
            app,
            routes,
            concepts,
            commands: self.commands.map(|f| {
                Box::new(move |session: Session<S, B>, command| f(session.without_app(), command))
                    as CommandRoute<S, B>
            }),
            fallback: self.fallback.map(|f| {
                Box::new(move |session: Session<S, B>, call| f(session.without_app(), call))
                    as OnCall<S, B>
            }),
            on_connect: self.on_connect.map(|f| {
                Box::new(move |session: Session<S, B>| f(session.without_app())) as OnSession<S, B>
            }),
            on_send: self.on_send.map(|f| {
                Box::new(move |session: Session<S, B>, send| f(session.without_app(), send))
                    as OnSend<S, B>
            }),
            on_close: self.on_close.map(|f| {
                Box::new(move |session: Session<S, B>, closed| f(session.without_app(), closed))
                    as OnClose<S, B>
            }),
        }
    }
}

impl<S: Send + Sync + 'static, A: Clone + Send + Sync + 'static> Router<S, A> {
    /// Routes the CALLs of one action of one version (the request type `R` says which) to
    /// `handler`. Routing the same request type again replaces the earlier handler.
    ///
    /// ```
    /// use ocpp_tokio::{v1_6, DateTime, Router};
    ///
    /// let router = Router::<()>::default().on(|_, _: v1_6::HeartbeatRequest| async {
    ///     Ok(v1_6::HeartbeatResponse::new(DateTime::now()))
    /// });
    /// # let _ = router;
    /// ```
    pub fn on<R, F, Fut>(mut self, handler: F) -> Self
    where
        R: ActionRequest + TryFrom<Request, Error = Request> + Send + 'static,
        ResponseOf<R>: Into<Response>,
        F: Fn(Session<S, A>, R) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Reply<ResponseOf<R>>> + Send + 'static,
    {
        let route: Route<S, A> = Box::new(move |session, request| {
            let request = R::try_from(request)?;
            let answer = handler(session, request);
            Ok(Box::pin(async move { Answer::from(answer.await) }))
        });
        let name = <R::Action as ocpp_messages::action::OcppAction>::NAME;
        let routes = self.routes.entry(name).or_default();
        routes.retain(|(id, _)| *id != TypeId::of::<R>());
        routes.push((TypeId::of::<R>(), route));
        self
    }

    /// Routes one concept of the protocol, in every version, to `handler` (the model of
    /// [`ocpp_model`]): the concept `C` says which (`TransactionStarted` is a 1.6
    /// StartTransaction and a 2.x TransactionEvent `Started`; `AuthorizationRequested` an
    /// Authorize of any version...). The handler answers in the same vocabulary
    /// ([`ocpp_model::EventAnswer`], or what converts into it: a `BootAnswer`, an
    /// `Authorization`), and the router makes the version's response of it, checked
    /// against its schema (an answer that does not fit the event goes out as CALLERROR
    /// `InternalError`, with the reason). A CALL that a typed route ([`Router::on`]) takes is
    /// not offered to the concepts; one that no concept takes goes to the
    /// [fallback](Router::fallback). Routing the same concept again replaces the handler.
    ///
    /// ```
    /// use ocpp_model::{EventAnswer, AuthorizationRequested, Authorization, AuthorizationStatus};
    /// use ocpp_tokio::{Router, Session};
    ///
    /// // One handler for the Authorize of 1.6, 2.0.1 and 2.1.
    /// async fn authorize(_: Session<()>, asked: AuthorizationRequested) -> ocpp_tokio::Reply<EventAnswer> {
    ///     let known = asked.token.value == "TAG-OK";
    ///     let status = if known { AuthorizationStatus::Accepted } else { AuthorizationStatus::Invalid };
    ///     Ok(EventAnswer::Authorization(Authorization::new(status)))
    /// }
    ///
    /// let router = Router::<()>::default().on_concept(authorize);
    /// # let _ = router;
    /// ```
    // The event comes back by value to try the next concept (no copy, no allocation).
    #[allow(clippy::result_large_err)]
    pub fn on_concept<C, F, Fut, R>(mut self, handler: F) -> Self
    where
        C: Concept + Send + 'static,
        F: Fn(Session<S, A>, C) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Reply<R>> + Send + 'static,
        R: Into<ocpp_model::EventAnswer>,
    {
        let route: ConceptRoute<S, A> = Box::new(move |session, event| {
            let version = session.version();
            let asked = event.clone();
            let concept = C::from_event(event)?;
            let answer = handler(session, concept);
            Ok(Box::pin(async move {
                match answer.await.map(Into::into) {
                    Ok(answer) => match ocpp_model::respond(&asked, &answer, version) {
                        Ok(response) => Answer::Result(response),
                        Err(e) => Answer::error(ErrorCode::InternalError, e.to_string()),
                    },
                    Err(error) => Answer::Error(error),
                }
            }))
        });
        self.concepts.retain(|(id, _)| *id != TypeId::of::<C>());
        self.concepts.push((TypeId::of::<C>(), route));
        self
    }

    /// Routes every command of the central system, in every version, to `handler`: a
    /// station's one handler for what it is asked ([`Command::from_request`]: a 1.6
    /// RemoteStartTransaction and a 2.x RequestStartTransaction are one
    /// [`Command::RemoteStart`]; Reset, UnlockConnector, ChangeAvailability, TriggerMessage,
    /// a [`Setting`](ocpp_model::Setting) changed by ChangeConfiguration or SetVariables...).
    /// The handler answers with an [`Outcome`], which the router makes into the version's
    /// response, checked against its schema ([`Command::answer`]; an outcome the version has
    /// no word for, a 1.6 Reset `Scheduled`, goes out as CALLERROR `InternalError`), or with a
    /// CALLERROR. A CALL that a typed route ([`Router::on`]) or a concept takes is not offered
    /// here; one that does not read as a command (a remote start with a charging profile...)
    /// goes to the [fallback](Router::fallback). Routing commands again replaces the handler.
    ///
    /// ```
    /// use ocpp_model::{Command, Outcome};
    /// use ocpp_tokio::{ErrorAnswer, Reply, Router, Session};
    ///
    /// // Remote starts of 1.6, 2.0.1 and 2.1 alike; every other command refused.
    /// async fn asked(_: Session<()>, command: Command) -> Reply<Outcome> {
    ///     match command {
    ///         Command::RemoteStart { token, .. } if token.value == "TAG-OK" => Ok(Outcome::Accepted),
    ///         Command::RemoteStart { .. } => Ok(Outcome::Rejected),
    ///         other => Err(ErrorAnswer::not_supported(other.name())),
    ///     }
    /// }
    ///
    /// let router = Router::<()>::for_station().on_command(asked);
    /// # let _ = router;
    /// ```
    pub fn on_command<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Session<S, A>, Command) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Reply<Outcome>> + Send + 'static,
    {
        self.commands = Some(Box::new(move |session, command| {
            let version = session.version();
            let answer = handler(session, command.clone());
            Box::pin(async move {
                match answer.await {
                    Ok(outcome) => match command.answer(version, outcome) {
                        Ok(response) => Answer::Result(response),
                        Err(e) => Answer::error(ErrorCode::InternalError, e.to_string()),
                    },
                    Err(error) => Answer::Error(error),
                }
            })
        }));
        self
    }

    /// Answers the CALLs no route takes (default: `NotSupported`), untyped: the answer goes
    /// through the core's answer rule, so one of another action is sent as CALLERROR
    /// `InternalError`, never as a wrong payload.
    pub fn fallback<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Session<S, A>, IncomingCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Answer> + Send + 'static,
    {
        self.fallback = Some(Box::new(move |session, call| {
            Box::pin(handler(session, call))
        }));
        self
    }

    /// Runs when a charge point is connected and registered, in a task of its own (it may
    /// call the charge point and wait; its CALLs are handled meanwhile).
    pub fn on_connect<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Session<S, A>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.on_connect = Some(Box::new(move |session| Box::pin(handler(session))));
        self
    }

    /// Handles the SENDs of a charge point (OCPP 2.1), one after the other.
    pub fn on_send<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Session<S, A>, IncomingCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.on_send = Some(Box::new(move |session, send| {
            Box::pin(handler(session, send))
        }));
        self
    }

    /// Runs when the connection of a charge point that had connected is over, with its
    /// session (and so its state) and why it ended.
    pub fn on_close<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Session<S, A>, Closed) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.on_close = Some(Box::new(move |session, closed| {
            Box::pin(handler(session, closed))
        }));
        self
    }

    /// The handler of `call`, or the fallback's answer.
    fn dispatch(&self, session: Session<S, A>, call: IncomingCall) -> BoxFuture<Answer> {
        let (id, mut request) = call.into_parts();
        if let Some(routes) = self.routes.get(request.action()) {
            for (_, route) in routes {
                match route(session.clone(), request) {
                    Ok(answer) => return answer,
                    Err(other) => request = other,
                }
            }
        }
        if !self.concepts.is_empty() {
            let mut event = StationEvent::from_request(&request);
            for (_, route) in &self.concepts {
                match route(session.clone(), event) {
                    Ok(answer) => return answer,
                    Err(other) => event = other,
                }
            }
        }
        if let Some(route) = &self.commands {
            if let Some(command) = Command::from_request(&request) {
                return route(session, command);
            }
        }
        match &self.fallback {
            Some(fallback) => fallback(session, IncomingCall::new(id, request)),
            None => {
                let answer = Answer::not_supported(request.action());
                Box::pin(async move { answer })
            }
        }
    }
}

impl<S: Send + Sync + 'static, A: Clone + Send + Sync + 'static> Handler for Router<S, A> {
    type State = S;

    fn on_upgrade(
        &self,
        connecting: Connecting,
    ) -> impl Future<Output = Result<S, Rejection>> + Send {
        (self.make_state)(connecting)
    }

    fn on_connect(&self, session: Session<S>) -> impl Future<Output = ()> + Send {
        let session = session.with_app(self.app.clone());
        optional(self.on_connect.as_ref().map(|handler| handler(session)))
    }

    fn on_call(
        &self,
        session: &Session<S>,
        call: IncomingCall,
    ) -> impl Future<Output = Answer> + Send {
        self.dispatch(session.clone().with_app(self.app.clone()), call)
    }

    fn on_send(&self, session: &Session<S>, send: IncomingCall) -> impl Future<Output = ()> + Send {
        optional(
            self.on_send
                .as_ref()
                .map(|handler| handler(session.clone().with_app(self.app.clone()), send)),
        )
    }

    fn on_close(&self, session: Session<S>, closed: Closed) -> impl Future<Output = ()> + Send {
        optional(
            self.on_close
                .as_ref()
                .map(|handler| handler(session.with_app(self.app.clone()), closed)),
        )
    }
}

/// Runs a handler the router was given, or nothing.
async fn optional(run: Option<BoxFuture<()>>) {
    if let Some(run) = run {
        run.await;
    }
}
