//! Session variables: initial globals in, plain-data globals out.

use lackpy_policy::wire::{Data, Limits};
use lackpy_policy::{validate_with_predefined, Namespace};
use lackpy_worker::interp::{run_with_globals, Globals, NoTools, RunResult};

fn cell(src: &str, initial: Vec<(String, Data)>, limits: &Limits) -> (RunResult, Globals) {
    let names: Vec<String> = initial.iter().map(|(n, _)| n.clone()).collect();
    let prog = match validate_with_predefined(src, &Namespace::default(), limits, &names) {
        Ok(p) => p,
        Err(e) => panic!("validation failed: {e:?}"),
    };
    let mut out = String::new();
    run_with_globals(&prog, &mut NoTools, &mut out, limits, initial)
}

/// A first cell: no initial variables, default limits.
fn fresh(src: &str) -> (RunResult, Globals) {
    cell(src, vec![], &Limits::default())
}

/// A first cell under the default limits as changed by `tweak`.
fn fresh_with(src: &str, tweak: impl FnOnce(&mut Limits)) -> (RunResult, Globals) {
    let mut limits = Limits::default();
    tweak(&mut limits);
    cell(src, vec![], &limits)
}

fn var<'a>(g: &'a Globals, name: &str) -> Option<&'a Data> {
    g.vars.iter().find(|(n, _)| n == name).map(|(_, d)| d)
}

#[test]
fn variables_carry_across_cells() {
    let l = Limits::default();
    let (r, g) = fresh("x = 41\nname = 'a'");
    assert_eq!(r.error, None);
    assert_eq!(var(&g, "x"), Some(&Data::Int(41)));
    let (r, g2) = cell("x + 1", g.vars.clone(), &l);
    assert_eq!(r.error, None);
    assert_eq!(r.value, Some(Data::Int(42)));
    // Mentioned initial variables come back; unmentioned ones do not.
    assert_eq!(var(&g2, "x"), Some(&Data::Int(41)));
    assert_eq!(var(&g2, "name"), None);
}

#[test]
fn containers_are_fresh_values() {
    let l = Limits::default();
    let init = vec![(
        "xs".to_string(),
        Data::List(vec![Data::Int(1), Data::Tuple(vec![Data::Str("a".into())])]),
    )];
    let (r, g) = cell("xs.append(3)\nd = {'k': {1, 2}}\nlen(xs)", init, &l);
    assert_eq!(r.error, None);
    assert_eq!(r.value, Some(Data::Int(3)));
    assert!(matches!(var(&g, "xs"), Some(Data::List(v)) if v.len() == 3));
    assert!(matches!(var(&g, "d"), Some(Data::Dict(_))));
}

#[test]
fn non_plain_values_are_skipped() {
    let (r, g) =
        fresh("r = range(3)\nit = enumerate([1])\nks = {'a': 1}.keys()\nok = list(range(3))");
    assert_eq!(r.error, None);
    assert_eq!(g.skipped, vec!["r", "it", "ks"]);
    assert_eq!(g.vars.len(), 1);
    assert_eq!(g.vars[0].0, "ok");
}

#[test]
fn failed_cell_keeps_what_it_assigned() {
    let (r, g) = fresh("a = 1\nb = 1 // 0\nc = 3");
    assert!(r.error.is_some());
    assert_eq!(var(&g, "a"), Some(&Data::Int(1)));
    assert_eq!(var(&g, "b"), None);
    assert_eq!(var(&g, "c"), None);
}

#[test]
fn reported_variables_are_bounded() {
    let (r, g) = fresh_with("small = 1\nbig = 'x' * 5000\nafter = 2", |l| {
        l.result_bytes = 1000;
    });
    assert_eq!(r.error, None);
    assert_eq!(g.skipped, vec!["big"]);
    assert!(var(&g, "small").is_some() && var(&g, "after").is_some());
}

#[test]
fn loop_variables_and_comprehension_locals() {
    let (r, g) = fresh("t = 0\nfor i in [1, 2, 3]:\n    t += i\nsq = [k * k for k in [1, 2]]");
    assert_eq!(r.error, None);
    assert_eq!(var(&g, "t"), Some(&Data::Int(6)));
    assert_eq!(var(&g, "i"), Some(&Data::Int(3)));
    // A comprehension's variable is local to it, as in Python 3.
    assert_eq!(var(&g, "k"), None);
}

#[test]
fn variables_survive_a_fuel_limit() {
    let spin = "a = [1, 2]\nn = 0\nfor i in range(100000000):\n    n += 1";
    let (r, g) = fresh_with(spin, |l| l.fuel = 10_000);
    assert_eq!(r.error.map(|e| e.type_name).as_deref(), Some("fuel"));
    assert!(var(&g, "a").is_some(), "{g:?}");
    assert!(var(&g, "n").is_some(), "{g:?}");
}
