//! The service's lock guards memory only, so one slow disk never stalls every session: a
//! store write or an audit write that blocks holds up the reply that made it, never another
//! session; and approvals answered concurrently, by one process or several on one SQLite
//! file, are all kept.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use toolgate_core::{Context, PermissionRequest, Refusal};
use toolgate_permission::{
    AgentSettings, Agents, Approval, ApprovalStore, AskMode, AuditLog, Effect, MemoryStore, Origin, PermissionService,
    Reply, StoreError,
};

/// How long a step that should be immediate may take before the test calls it stuck.
const STUCK: Duration = Duration::from_secs(20);

fn agents() -> Agents {
    Agents::build(&AgentSettings::default().with_permission(json!({"bash": {"*": "ask", "rm *": "deny"}}))).unwrap()
}

fn ctx(session: &str) -> Context {
    Context::new(session, "build").with_call("msg_1", format!("call_{session}"))
}

fn bash(command: &str, save: &str) -> PermissionRequest {
    PermissionRequest::new("bash").resources([command]).save([save])
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Polls `done` until it holds or the deadline passes.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + STUCK;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs `work` on its own thread and returns its result, or `None` when it is still
/// running after [`STUCK`] (held up by a lock).
fn within<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (sender, receiver) = channel();
    std::thread::spawn(move || {
        let _ = sender.send(work());
    });
    receiver.recv_timeout(STUCK).ok()
}

/// A memory store whose writes wait until the test lets them through.
#[derive(Debug)]
struct GatedStore {
    inner: MemoryStore,
    entered: Mutex<Sender<()>>,
    release: Mutex<Receiver<()>>,
}

impl ApprovalStore for GatedStore {
    fn list(&self, project_id: &str) -> Result<Vec<Approval>, StoreError> {
        self.inner.list(project_id)
    }

    fn add(&self, project_id: &str, action: &str, resources: &[String]) -> Result<usize, StoreError> {
        let _ = self.entered.lock().unwrap().send(());
        self.release
            .lock()
            .unwrap()
            .recv()
            .map_err(|error| StoreError::new("gated", error))?;
        self.inner.add(project_id, action, resources)
    }

    fn remove(&self, project_id: &str, id: &str) -> Result<bool, StoreError> {
        self.inner.remove(project_id, id)
    }

    fn clear(&self, project_id: &str) -> Result<usize, StoreError> {
        self.inner.clear(project_id)
    }

    fn version(&self) -> Result<Option<u64>, StoreError> {
        self.inner.version()
    }
}

#[test]
fn a_blocked_approval_write_holds_up_no_other_session() {
    // Declared first, dropped last: a failing assertion drops `let_through` first, which
    // ends the waiting write, so the runtime can shut down.
    let rt = runtime();
    let (entered, store_entered) = channel();
    let (let_through, release) = channel();
    let store = Arc::new(GatedStore {
        inner: MemoryStore::new(),
        entered: Mutex::new(entered),
        release: Mutex::new(release),
    });
    let service = PermissionService::builder(agents(), "/p")
        .store(store.clone())
        .mode(AskMode::Interactive)
        .build();
    let asking = {
        let service = service.clone();
        rt.spawn(async move { service.assert(&ctx("a"), bash("cargo build", "cargo build*")).await })
    };
    wait_until("the ask of session a", || !service.pending().is_empty());
    let id = service.pending()[0].id.clone();
    let replying = {
        let service = service.clone();
        std::thread::spawn(move || service.reply(&id, Reply::Always, None))
    };
    store_entered
        .recv_timeout(STUCK)
        .expect("precondition: the reply reached the store write");

    // While the write waits: session a already has its answer…
    let answered = rt.block_on(async { tokio::time::timeout(STUCK, asking).await });
    assert!(
        matches!(answered, Ok(Ok(Ok(())))),
        "session a's ask was not answered: {answered:?}"
    );
    // …another session is decided, and the approval already counts for it…
    let explained = {
        let service = service.clone();
        within(move || service.explain("b", "build", &bash("cargo build --release", "")))
    };
    let explained = explained.expect("session b's decision was held up by the store write");
    assert_eq!(explained[0].effect, Effect::Allow);
    assert_eq!(
        explained[0].rule.as_ref().map(|rule| rule.origin),
        Some(Origin::SavedApproval)
    );
    let decided = {
        let service = service.clone();
        within(move || runtime().block_on(service.assert(&ctx("b"), bash("cargo build --release", ""))))
    };
    assert_eq!(decided.expect("session b's ask was held up by the store write"), Ok(()));
    // …a deny still blocks, and a new ask of a third session is put to the person.
    let denied = {
        let service = service.clone();
        within(move || runtime().block_on(service.assert(&ctx("c"), bash("rm -rf /", "rm *"))))
    };
    assert!(matches!(denied, Some(Err(Refusal::Blocked { .. }))), "{denied:?}");
    let third = {
        let service = service.clone();
        rt.spawn(async move { service.assert(&ctx("c"), bash("ls", "ls*")).await })
    };
    wait_until("the ask of session c", || service.pending().len() == 1);
    assert!(
        !replying.is_finished(),
        "precondition: the store write was still waiting"
    );

    let_through.send(()).unwrap();
    replying.join().unwrap().expect("the approval was saved");
    let saved = store.inner.list("/p").unwrap();
    assert_eq!(saved.len(), 1);
    assert_eq!(
        (saved[0].action.as_str(), saved[0].resource.as_str()),
        ("bash", "cargo build*")
    );
    // Once written, the store says whether it stands: still allowed.
    assert_eq!(
        service.explain("d", "build", &bash("cargo build -v", ""))[0].effect,
        Effect::Allow
    );
    service.shutdown();
    let third = rt.block_on(async { tokio::time::timeout(STUCK, third).await });
    assert!(matches!(third, Ok(Ok(Err(_)))), "{third:?}");
}

/// Opens the pipe for reading when dropped (from a thread of its own: the open waits
/// for a writer), so no writer is left waiting on it.
struct Unblock(std::path::PathBuf);

impl Drop for Unblock {
    fn drop(&mut self) {
        let fifo = self.0.clone();
        std::thread::spawn(move || drop(std::fs::read(fifo)));
    }
}

#[test]
fn a_blocked_audit_write_holds_up_no_other_session() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("audit.jsonl");
    // A named pipe with no reader: opening it for writing waits, as a stuck disk would.
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "precondition: mkfifo made the pipe");
    let rt = runtime();
    // Should an assertion fail, a reader lets the waiting write through on the way out.
    let _unblock = Unblock(fifo.clone());
    let service = PermissionService::builder(agents(), "/p")
        .mode(AskMode::Interactive)
        .audit(Arc::new(AuditLog::new(&fifo)))
        .build();
    let asking = {
        let service = service.clone();
        rt.spawn(async move { service.assert(&ctx("a"), bash("cargo build", "cargo build*")).await })
    };
    wait_until("the ask of session a", || !service.pending().is_empty());
    let id = service.pending()[0].id.clone();
    let replying = {
        let service = service.clone();
        std::thread::spawn(move || service.reply(&id, Reply::Once, None))
    };
    // The reply only queues its record for the log's writer: it returns, and the asker
    // is answered, while the write still waits.
    let replied = within(move || replying.join().unwrap());
    assert!(
        matches!(replied, Some(Ok(()))),
        "the reply was held up by the audit write: {replied:?}"
    );
    let answered = rt.block_on(async { tokio::time::timeout(STUCK, asking).await });
    assert!(matches!(answered, Ok(Ok(Ok(())))), "{answered:?}");
    let seen = {
        let service = service.clone();
        within(move || {
            service.set_session_rules("b", Vec::new());
            (
                service.pending().len(),
                service.explain("b", "build", &bash("cargo test", ""))[0].effect,
            )
        })
    };
    assert_eq!(seen, Some((0, Effect::Ask)), "session b was held up by the audit write");

    // A reader lets the write through; the line is the reply. Dropping the service lets
    // the writer finish its queue and close the pipe, which ends the reader's read.
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(&fifo).unwrap())
    };
    drop(service);
    let line = reader.join().unwrap();
    assert!(line.contains(r#""reply":"once""#), "{line}");
}

/// Asks `command` in its own session and answers "always" from another thread, `per`
/// times each over `threads` threads, while other threads keep deciding.
#[cfg(feature = "sqlite")]
fn ask_and_approve_concurrently(services: &[PermissionService], threads: usize, per: usize) {
    let rt = Arc::new(runtime());
    let workers: Vec<_> = (0..threads)
        .map(|thread| {
            let service = services[thread % services.len()].clone();
            let rt = rt.clone();
            std::thread::spawn(move || {
                for n in 0..per {
                    let session = format!("s{thread}_{n}");
                    let command = format!("tool{thread}_{n} run");
                    let asking = {
                        let service = service.clone();
                        let request = bash(&command, &format!("tool{thread}_{n} *"));
                        let ctx = ctx(&session);
                        rt.spawn(async move { service.assert(&ctx, request).await })
                    };
                    // Polled: the request appears when the spawned ask runs.
                    let deadline = Instant::now() + STUCK;
                    let id = loop {
                        if let Some(request) = service.pending().into_iter().find(|r| r.session_id == session) {
                            break request.id;
                        }
                        assert!(Instant::now() < deadline, "the ask of {session} never came");
                        std::thread::yield_now();
                    };
                    service.reply(&id, Reply::Always, None).unwrap();
                    assert_eq!(rt.block_on(asking).unwrap(), Ok(()));
                }
            })
        })
        .collect();
    // Meanwhile: decisions that reload the approvals again and again.
    let readers: Vec<_> = services
        .iter()
        .map(|service| {
            let service = service.clone();
            let done = workers.len();
            std::thread::spawn(move || {
                for n in 0..200 {
                    let command = format!("tool{}_0 run", n % done);
                    service.explain("reader", "build", &bash(&command, ""));
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    for reader in readers {
        reader.join().unwrap();
    }
}

#[cfg(feature = "sqlite")]
#[test]
fn concurrent_always_replies_on_one_database_lose_no_approval() {
    use toolgate_permission::SqliteStore;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("toolgate.db");
    // Two services on their own connections, as two processes on one file.
    let services: Vec<PermissionService> = (0..2)
        .map(|_| {
            let store: Arc<dyn ApprovalStore> = Arc::new(SqliteStore::open(&db).unwrap());
            PermissionService::builder(agents(), "/p")
                .store(store)
                .mode(AskMode::Interactive)
                .build()
        })
        .collect();
    let (threads, per) = (8, 6);
    ask_and_approve_concurrently(&services, threads, per);

    let saved = SqliteStore::open(&db).unwrap().list("/p").unwrap();
    assert_eq!(saved.len(), threads * per, "{saved:?}");
    // Every approval counts in both services (each sees the other's writes) and in a
    // fresh one that cannot ask anyone.
    let fresh: Arc<dyn ApprovalStore> = Arc::new(SqliteStore::open(&db).unwrap());
    let headless = PermissionService::builder(agents(), "/p")
        .store(fresh)
        .mode(AskMode::Headless)
        .build();
    let rt = runtime();
    for thread in 0..threads {
        for n in 0..per {
            let request = bash(&format!("tool{thread}_{n} run --again"), "");
            for service in &services {
                let explained = service.explain("check", "build", &request);
                assert_eq!(explained[0].effect, Effect::Allow, "tool{thread}_{n}");
            }
            assert_eq!(rt.block_on(headless.assert(&ctx("check"), request)), Ok(()));
        }
    }
    // And a configured deny still wins over any of them.
    let denied = rt.block_on(headless.assert(&ctx("check"), bash("rm -rf tool0_0", "")));
    assert!(matches!(denied, Err(Refusal::Blocked { .. })), "{denied:?}");
}

#[cfg(feature = "sqlite")]
#[test]
fn an_approval_removed_through_the_store_asks_again() {
    use toolgate_permission::SqliteStore;
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ApprovalStore> = Arc::new(SqliteStore::open(dir.path().join("toolgate.db")).unwrap());
    let service = PermissionService::builder(agents(), "/p")
        .store(store)
        .mode(AskMode::Interactive)
        .build();
    let rt = runtime();
    let asking = {
        let service = service.clone();
        rt.spawn(async move { service.assert(&ctx("a"), bash("cargo build", "cargo build*")).await })
    };
    wait_until("the ask", || !service.pending().is_empty());
    service.reply(&service.pending()[0].id, Reply::Always, None).unwrap();
    assert_eq!(rt.block_on(asking).unwrap(), Ok(()));
    let request = bash("cargo build --release", "");
    assert_eq!(service.explain("b", "build", &request)[0].effect, Effect::Allow);
    // Removed through the same connection (the server's DELETE /approvals/{id}).
    let store = service.store().unwrap();
    let id = store.list("/p").unwrap()[0].id.clone();
    assert!(store.remove("/p", &id).unwrap());
    assert_eq!(service.explain("b", "build", &request)[0].effect, Effect::Ask);
    assert!(service.would_ask(&ctx("b"), &request));
}

#[test]
fn a_failed_write_still_counts_in_this_process() {
    /// A store that takes nothing.
    #[derive(Debug)]
    struct Broken;
    impl ApprovalStore for Broken {
        fn list(&self, _: &str) -> Result<Vec<Approval>, StoreError> {
            Ok(Vec::new())
        }
        fn add(&self, _: &str, _: &str, _: &[String]) -> Result<usize, StoreError> {
            Err(StoreError::new("broken", "disk full"))
        }
        fn remove(&self, _: &str, _: &str) -> Result<bool, StoreError> {
            Ok(false)
        }
        fn clear(&self, _: &str) -> Result<usize, StoreError> {
            Ok(0)
        }
    }
    let service = PermissionService::builder(agents(), "/p")
        .store(Arc::new(Broken))
        .mode(AskMode::Interactive)
        .build();
    let rt = runtime();
    let asking = {
        let service = service.clone();
        rt.spawn(async move { service.assert(&ctx("a"), bash("cargo build", "cargo build*")).await })
    };
    wait_until("the ask", || !service.pending().is_empty());
    let replied = service.reply(&service.pending()[0].id, Reply::Always, None);
    assert!(replied.unwrap_err().to_string().contains("disk full"));
    assert_eq!(rt.block_on(asking).unwrap(), Ok(()));
    // The store reloads (version unknown) on every look and says nothing; memory keeps it.
    let request = bash("cargo build --release", "");
    assert_eq!(service.explain("b", "build", &request)[0].effect, Effect::Allow);
    assert!(!service.would_ask(&ctx("b"), &request));
}

/// A store whose reads wait until the test lets them through.
#[derive(Debug)]
struct SlowReads {
    entered: Mutex<Sender<()>>,
    release: Mutex<Receiver<()>>,
}

impl ApprovalStore for SlowReads {
    fn list(&self, _: &str) -> Result<Vec<Approval>, StoreError> {
        let _ = self.entered.lock().unwrap().send(());
        self.release
            .lock()
            .unwrap()
            .recv()
            .map_err(|error| StoreError::new("slow", error))?;
        Ok(Vec::new())
    }
    fn add(&self, _: &str, _: &str, _: &[String]) -> Result<usize, StoreError> {
        Ok(0)
    }
    fn remove(&self, _: &str, _: &str) -> Result<bool, StoreError> {
        Ok(false)
    }
    fn clear(&self, _: &str) -> Result<usize, StoreError> {
        Ok(0)
    }
}

#[test]
fn a_slow_approval_read_holds_up_no_other_session() {
    let rt = runtime();
    let (entered, read_entered) = channel();
    let (let_through, release) = channel();
    let store = Arc::new(SlowReads {
        entered: Mutex::new(entered),
        release: Mutex::new(release),
    });
    let service = PermissionService::builder(agents(), "/p")
        .store(store)
        .mode(AskMode::Headless)
        .build();
    // Session a's ask could be answered by a saved approval: the store is read.
    let reading = {
        let service = service.clone();
        std::thread::spawn(move || service.explain("a", "build", &bash("cargo build", "")))
    };
    read_entered
        .recv_timeout(STUCK)
        .expect("precondition: the decision reached the store read");
    // Meanwhile session b is decided from the rules alone.
    let denied = {
        let service = service.clone();
        within(move || runtime().block_on(service.assert(&ctx("b"), bash("rm -rf /", ""))))
    };
    assert!(
        matches!(denied, Some(Err(Refusal::Blocked { .. }))),
        "session b was held up by the store read: {denied:?}"
    );
    assert!(!reading.is_finished(), "precondition: the store read was still waiting");
    drop(let_through);
    // A store that cannot be read adds no approval: the ask stands.
    assert_eq!(reading.join().unwrap()[0].effect, Effect::Ask);
    drop(rt);
}

/// Library wording (the library serves programs other than toolgate's binary): the reasons
/// the service gives name no flag of any program; the binary words its own advice
/// (`PermissionServiceBuilder::headless_note`).
#[test]
fn refusal_reasons_name_no_command_line_flag() {
    let rt = runtime();
    let blind = PermissionRequest::new("bash")
        .resources(["sh -c \"$X\""])
        .unsaveable(["sh -c \"$X\""]);
    let auto = PermissionService::builder(agents(), "/p").mode(AskMode::Auto).build();
    let headless = PermissionService::builder(agents(), "/p")
        .mode(AskMode::Headless)
        .build();
    let reasons: Vec<String> = [
        rt.block_on(auto.assert(&ctx("a"), blind.clone())),
        rt.block_on(headless.assert(&ctx("a"), bash("cargo build", ""))),
        {
            headless.shutdown();
            rt.block_on(headless.assert(&ctx("a"), bash("cargo build", "")))
        },
    ]
    .into_iter()
    .map(|outcome| match outcome {
        Err(Refusal::Declined { reason: Some(reason) }) => reason,
        other => panic!("expected a declined ask with a reason, got {other:?}"),
    })
    .collect();
    assert!(reasons[0].contains("not approved automatically"), "{}", reasons[0]);
    for reason in &reasons {
        assert!(!reason.contains("--"), "a flag in a library message: {reason}");
    }
}

/// The spilled-output allowance is where the caller says: the library knows no data
/// layout.
#[test]
fn the_spilled_output_allowance_is_the_callers_directory() {
    let with = |output_dir: Option<&str>| {
        Agents::build(&{
            let mut settings = AgentSettings::default();
            settings.output_dir = output_dir.map(std::path::PathBuf::from);
            settings
        })
        .unwrap()
    };
    let spill = "/var/spills/tool_1";
    let given = with(Some("/var/spills"));
    assert_eq!(
        given
            .get("build")
            .unwrap()
            .rules
            .evaluate("external_directory", spill)
            .effect,
        Effect::Allow
    );
    // Another directory, or none given, gets no allowance.
    for agents in [with(Some("/elsewhere")), with(None)] {
        for name in ["build", "plan", "explore"] {
            let rules = &agents.get(name).unwrap().rules;
            assert_eq!(
                rules.evaluate("external_directory", spill).effect,
                Effect::Ask,
                "{name}"
            );
            assert_eq!(
                rules.evaluate("external_directory", "/tool-output/tool_1").effect,
                Effect::Ask,
                "{name}"
            );
        }
    }
}
