use super::*;

fn kw(name: &str) -> Value {
    Value::keyword(name)
}

#[test]
fn reads_a_plist_with_keywords_case_normalised() {
    let s = read("(:TYPE :event :Payload (:sensor :chat-message :text \"hi\") :depth 0)").unwrap();
    assert_eq!(s.plist_keys().unwrap(), ["type", "payload", "depth"]);
    assert!(equal(s.get("type").unwrap(), &kw("event")));
    let payload = s.get("payload").unwrap();
    assert!(equal(
        plist_get(payload, "text").unwrap(),
        &Value::string("hi")
    ));
    assert_eq!(s.get("depth").and_then(Value::as_i64), Some(0));
    assert!(s.get("missing").is_none());
    // Symbols and strings keep their case.
    let s = read("(:Name Foo :text \"MiXeD\")").unwrap();
    assert!(equal(s.get("name").unwrap(), &Value::symbol("Foo")));
    assert!(equal(s.get("text").unwrap(), &Value::string("MiXeD")));
}

#[test]
fn long_quote_runs_are_refused_not_overflowed() {
    for n in [17, 9_000, 100_000] {
        let text = format!("{}x", "'".repeat(n));
        assert!(
            matches!(read(&text), Err(SexpError::Syntax { .. })),
            "{n} quotes"
        );
        let spaced = format!("{}x", "' ".repeat(n));
        assert!(read(&spaced).is_err(), "{n} spaced quotes");
    }
    // A few quotes are fine, and become (quote …).
    let s = read("'''x").unwrap();
    assert_eq!(print(s.value()), "(quote (quote (quote x)))");
}

#[test]
fn deep_nesting_is_refused() {
    let deep = format!("{}{}", "(".repeat(100_000), ")".repeat(100_000));
    let err = read(&deep).unwrap_err();
    assert!(
        matches!(
            err,
            SexpError::Syntax {
                line: 1,
                column: 65,
                ..
            }
        ),
        "{err}"
    );
    // Quotes before lists count as levels too.
    let mixed = "'(".repeat(40) + &")".repeat(40);
    assert!(read(&mixed).is_err());
    let ok = format!("{}{}", "(".repeat(60), ")".repeat(60));
    assert!(read(&ok).is_ok());
}

#[test]
fn long_flat_lists_drop_without_recursion() {
    // lexpr 0.2.7 overflows the stack dropping a list of ~32,000 elements.
    let text = format!("({})", "1 ".repeat(400_000));
    let s = read(&text).unwrap();
    drop(s);
    let built = Value::list((0..300_000).map(Value::from).collect::<Vec<_>>());
    drop_iteratively(built);
    let vector = read(&format!("[{}]", "a ".repeat(300_000))).unwrap();
    assert_eq!(print(vector.value()).len(), 600_001);
}

#[test]
fn reader_macros_are_refused() {
    for text in [
        "#.(shell-command \"rm -rf ~\")",
        "(:a #'car)",
        "#s(hash-table data (a 1))",
        "#x10",
        "(:ok t :eval #.(delete-file \"x\"))",
    ] {
        let err = read(text).unwrap_err();
        assert!(
            matches!(&err, SexpError::Syntax { message, .. } if message.contains("reader macro")),
            "{text}: {err}"
        );
    }
    // Inside strings, comments and character literals a # is just a character.
    let s = read("(:text \"#.(x)\" ; #.(y)\n :c ?#)").unwrap();
    assert!(equal(s.get("text").unwrap(), &Value::string("#.(x)")));
    assert!(equal(s.get("c").unwrap(), &Value::Char('#')));
}

#[test]
fn errors_say_where() {
    let err = read("(:a 1\n :b \"unterminated)").unwrap_err();
    assert_eq!(
        err,
        SexpError::Syntax {
            line: 2,
            column: 5,
            message: "unterminated string".into()
        }
    );
    let err = read("(:a 1))").unwrap_err();
    assert!(
        matches!(
            err,
            SexpError::Syntax {
                line: 1,
                column: 7,
                ..
            }
        ),
        "{err}"
    );
    assert!(matches!(read("(:a"), Err(SexpError::Syntax { .. })));
    assert_eq!(read("  ; only a comment\n").unwrap_err(), SexpError::Empty);
    assert_eq!(read("(a) (b)").unwrap_err(), SexpError::Trailing);
    assert!(matches!(
        read(&"a".repeat(reader::MAX_INPUT + 1)),
        Err(SexpError::TooLarge { .. })
    ));
}

#[test]
fn read_all_reads_every_form() {
    let forms = read_all("(:a 1) (:b 2) sym \"str\"").unwrap();
    assert_eq!(forms.len(), 4);
    assert_eq!(forms[1].get("b").and_then(Value::as_i64), Some(2));
}

#[test]
fn plist_shape_errors() {
    assert!(read("(:a 1 :b)").unwrap().plist_keys().is_err());
    assert!(read("(a 1)").unwrap().plist_keys().is_err());
    assert!(read("42").unwrap().plist_keys().is_err());
    assert_eq!(
        read("nil").unwrap().plist_keys().unwrap(),
        Vec::<&str>::new()
    );
}

#[test]
fn printer_round_trips_through_the_reader() {
    for text in [
        "(:type :request :target :emacs :action :insert :buffer \"*org-agent-chat*\" :text \"a \\\"quoted\\\" line\\nand a tab\\t\")",
        "(1 -2 3.5 -0.25 1e300 -1e+300 2.5e-8 7. (a . b) [x y \"z\"] nil t)",
        "(\"ünïcødé ✓ 🎉\" ?a ?\\( \"\\u0001\")",
        "((a b) (c (d (e))))",
    ] {
        let v = read(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let printed = print(v.value());
        let again = read(&printed).unwrap_or_else(|e| panic!("{printed}: {e}"));
        assert_eq!(v, again, "{text} → {printed}");
        assert_eq!(print(again.value()), printed);
    }
}

#[test]
fn escaped_symbols_are_refused_clearly() {
    let err = read("(foo\\ bar)").unwrap_err();
    assert!(
        matches!(&err, SexpError::Syntax { message, .. } if message.contains("escaped")),
        "{err}"
    );
}

#[test]
fn printer_writes_emacs_syntax() {
    let v = read("(:a t :b nil :c 1.0 :d \"x\\ny\")").unwrap();
    assert_eq!(print(v.value()), "(:a t :b nil :c 1.0 :d \"x\\ny\")");
    assert_eq!(print(&Value::from(f64::INFINITY)), "1.0e+INF");
    assert_eq!(print(&Value::symbol("")), "##");
    assert_eq!(print(&Value::symbol("1.5")), "\\1.5");
    assert_eq!(print(&Value::symbol("a b")), "a\\ b");
}
