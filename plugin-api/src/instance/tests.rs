use super::*;
use crate::testkit;

fn ctx() -> ComponentContext {
    testkit::context("test", "instance")
}

#[test]
fn install_call_take() {
    static I: Instance<Vec<u32>> = Instance::new();
    assert_eq!(I.call("send", |v| v.len()), Err(EntryError::NotInitialized));
    assert_eq!(I.install(&ctx(), || Ok::<_, String>(vec![1])), Ok(Ok(())));
    assert_eq!(
        I.install(&ctx(), || Ok::<_, String>(vec![2])),
        Err(EntryError::AlreadyInitialized)
    );
    assert_eq!(
        I.call("send", |v| {
            v.push(2);
            v.len()
        }),
        Ok(2)
    );
    assert_eq!(I.take(), Ok(Some(vec![1, 2])));
    assert_eq!(I.take(), Ok(None));
}

#[test]
fn a_failed_install_installs_nothing() {
    static I: Instance<u32> = Instance::new();
    assert_eq!(
        I.install(&ctx(), || Err::<u32, _>("no device")),
        Ok(Err("no device"))
    );
    assert_eq!(I.is_installed(), Ok(false));
    let panicked = I.install(&ctx(), || -> Result<u32, String> { panic!("in init") });
    assert!(
        matches!(panicked, Err(EntryError::Panicked(ref m)) if m.contains("in init")),
        "{panicked:?}"
    );
    assert_eq!(I.is_installed(), Ok(false));
}

#[test]
fn nested_entry_is_refused_in_every_profile() {
    static I: Instance<u32> = Instance::new();
    I.install(&ctx(), || Ok::<_, ()>(7)).unwrap().unwrap();
    let nested = I.call("progress", |_| I.call("send", |v| *v));
    assert_eq!(nested, Ok(Err(EntryError::Reentered)));
    assert_eq!(I.take(), Ok(Some(7)));
}

#[test]
fn a_panic_poisons_logs_once_and_recover_still_runs() {
    static I: Instance<u32> = Instance::new();
    let context = testkit::context("test", "poisoned");
    I.install(&context, || Ok::<_, ()>(1)).unwrap().unwrap();
    let first = I.call("progress", |_| -> u32 { panic!("boom") });
    let Err(EntryError::Panicked(text)) = first else {
        panic!("{first:?}")
    };
    assert!(text.starts_with("progress panicked: 'boom' at "), "{text}");
    let later = I.call("send", |v| *v);
    assert_eq!(later, Err(EntryError::Stopped(text.clone())));
    assert_eq!(
        later.unwrap_err().to_string(),
        format!("the component stopped after an internal error ({text})")
    );
    let mut seen = 0;
    I.recover(|v| seen = *v).unwrap();
    assert_eq!(seen, 1);
    let logged = testkit::logged_by("test", "poisoned");
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert_eq!(logged[0].0, crate::verbosity::ERROR);
    assert!(
        logged[0].1.contains("progress panicked: 'boom'"),
        "{logged:?}"
    );
    assert_eq!(I.take(), Ok(Some(1)));
}
