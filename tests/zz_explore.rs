use org_agent::store::*;
#[test]
fn one() {
    for t in ["#+begin_foo\n#+end_foo\n", "#+begin_foo\n#+end_foo", "#+begin_quote\n#+end_quote\n", "#+begin_src\n#+end_src\n", "#+begin_example\n#+end_example\n", "* h\n#+begin_foo\n#+end_foo\n"] {
        let tt = t.to_string();
        let r = std::panic::catch_unwind(move || {
            let s = Store::in_memory(Config::default());
            s.ingest_text("/t/a.org", &tt, None, None, None).map(|_| ())
        });
        println!("{t:?} -> panicked={}", r.is_err());
    }
}
