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
fn escaped_symbols_read_as_emacs_reads_them() {
    // A backslash makes the next character part of the name, and the token a symbol.
    for (text, name) in [
        ("foo\\ bar", "foo bar"),
        ("\\1.5", "1.5"),
        ("\\.", "."),
        ("a\\(b", "a(b"),
        ("\\?q", "?q"),
        ("\\`", "`"),
    ] {
        let s = read(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!(equal(s.value(), &Value::symbol(name)), "{text}: {s:?}");
        // And the printer escapes just as much.
        assert_eq!(read(&print(s.value())).unwrap(), s, "{text}");
    }
    let s = read("(:A\\ B 1)").unwrap();
    assert_eq!(s.plist_keys().unwrap(), ["a b"]);
    assert!(read("foo\\").is_err());
}

/// Emacs reads `` `x `` as (\` x), `,x` as (\, x) and `,@x` as (\,@ x); a symbol written
/// `quasiquote` stays that symbol.
#[test]
fn backquotes_read_as_emacs_reads_them() {
    let s = read("(`a ,b ,@c quasiquote unquote)").unwrap();
    let want = Value::list(vec![
        Value::list(vec![Value::symbol("`"), Value::symbol("a")]),
        Value::list(vec![Value::symbol(","), Value::symbol("b")]),
        Value::list(vec![Value::symbol(",@"), Value::symbol("c")]),
        Value::symbol("quasiquote"),
        Value::symbol("unquote"),
    ]);
    assert!(equal(s.value(), &want), "{s:?}");
}

/// Character literals as Emacs reads them; `lexpr` refused `?(` and read none of the
/// modifier forms.
#[test]
fn character_literals_read_as_emacs_reads_them() {
    for (text, code) in [
        ("?a", 97),
        ("?(", 40),
        ("?\\(", 40),
        ("?\\n", 10),
        ("?\\s", 32),
        ("?\\^I", 9),
        ("?\\C-a", 1),
        ("?\\^?", 127),
        ("?\\M-a", 134_217_825),
        ("?\\C-\\M-a", 134_217_729),
        ("?\\x41", 65),
        ("?\\101", 65),
        ("?\\u00e9", 233),
        ("?\\U0001F389", 0x1F389),
        ("?é", 233),
    ] {
        let s = read(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!(equal(s.value(), &Value::from(code as i64)), "{text}: {s:?}");
    }
    let s = read("(?a?b)").unwrap();
    assert_eq!(print(s.value()), "(?a ?b)");
    for bad in ["?ab", "?", "?\\u12", "?\\N{SNOWMAN}"] {
        assert!(read(bad).is_err(), "{bad}");
    }
}

/// Emacs reads a `.` followed by a closing bracket as a symbol: `(a .)` is (a \.).
#[test]
fn a_dot_before_a_closing_bracket_is_a_symbol() {
    let s = read("(a . )").unwrap();
    let want = Value::list(vec![Value::symbol("a"), Value::symbol(".")]);
    assert!(equal(s.value(), &want), "{s:?}");
    let s = read("(a . b)").unwrap();
    assert_eq!(print(s.value()), "(a . b)");
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

/// What Emacs 28's `read` gives for each token (checked against real Emacs, with more
/// generated cases, in tests/fuzz.rs).
#[test]
fn numbers_read_as_emacs_reads_them() {
    let int = |i: i64| Value::from(i);
    let float = |f: f64| Value::from(f);
    let sym = |s: &str| Value::symbol(s);
    let cases: Vec<(&str, Value)> = vec![
        (".5", float(0.5)),
        ("-.5", float(-0.5)),
        ("+.5", float(0.5)),
        (".0", float(0.0)),
        ("-.0", float(-0.0)),
        ("1.", int(1)),
        ("-1.", int(-1)),
        ("+1.", int(1)),
        ("+1", int(1)),
        ("-0", int(0)),
        ("007", int(7)),
        ("1.e3", float(1000.0)),
        ("1.E3", float(1000.0)),
        (".5e1", float(5.0)),
        ("+.5e-2", float(0.005)),
        ("1e3", float(1000.0)),
        ("1e01", float(10.0)),
        ("1e-400", float(0.0)),
        ("00.5", float(0.5)),
        ("-0.0", float(-0.0)),
        ("0.30000000000000004", float(0.1 + 0.2)),
        ("1.7976931348623157e308", float(f64::MAX)),
        ("4.9406564584124654e-324", float(f64::from_bits(1))),
        ("9223372036854775807", int(i64::MAX)),
        ("-9223372036854775808", int(i64::MIN)),
        ("18446744073709551615", Value::from(u64::MAX)),
        ("-.", sym("-.")),
        ("+.", sym("+.")),
        (".e3", sym(".e3")),
        ("5.e", sym("5.e")),
        ("1e", sym("1e")),
        ("1e+", sym("1e+")),
        (".5e", sym(".5e")),
        ("..5", sym("..5")),
        (".5.", sym(".5.")),
        ("1.5.2", sym("1.5.2")),
        ("0x10", sym("0x10")),
        ("1_000", sym("1_000")),
        ("+-1", sym("+-1")),
        ("1+", sym("1+")),
        (".-5", sym(".-5")),
        (".foo", sym(".foo")),
        ("-.5e-3x", sym("-.5e-3x")),
        ("+", sym("+")),
        ("-", sym("-")),
        ("1e+INFx", sym("1e+INFx")),
        ("é", sym("é")),
        ("{x}", sym("{x}")),
        ("a\u{2003}b", sym("a\u{2003}b")),
        ("oa\u{E000}", sym("oa\u{E000}")),
    ];
    for (text, want) in &cases {
        let got = read(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!(
            equal(got.value(), want) && got.value().is_number() == want.is_number(),
            "{text}: read {got:?}, Emacs reads {}",
            print(want)
        );
        if let Some(f) = want.as_f64().filter(|_| want.is_f64()) {
            let g = got.value().as_f64().unwrap_or(f64::NAN);
            assert_eq!(g.to_bits(), f.to_bits(), "{text}: {g} is not {f}");
        }
    }
    // In context: lists, dotted pairs, vectors, quotes, keyword values.
    let s = read("(:a .5 :b (1. . -.5) :c [.5e1 x 1+] :d '.5)").unwrap();
    assert_eq!(
        print(s.value()),
        "(:a 0.5 :b (1 . -0.5) :c [5.0 x 1+] :d (quote 0.5))"
    );
    let forms = read_all(".5 1+ 2.5 (.25)").unwrap();
    let printed: Vec<String> = forms.iter().map(|f| print(f.value())).collect();
    assert_eq!(printed, ["0.5", "1+", "2.5", "(0.25)"]);
}

#[test]
fn numbers_a_plist_cannot_hold_are_refused() {
    for text in [
        "1.0e+INF",
        "-1.0e+INF",
        "1e+INF",
        ".5e+INF",
        "0.0e+NaN",
        "(:a 1e400)",
        "-1e400",
        "99999999999999999999",
        "-9223372036854775809",
    ] {
        let err = read(text).unwrap_err();
        assert!(
            matches!(&err, SexpError::Syntax { message, .. } if message.contains("range") || message.contains("finite")),
            "{text}: {err}"
        );
    }
    // The error names where the token starts.
    assert_eq!(
        read("(:a\n  1e999)").unwrap_err(),
        SexpError::Syntax {
            line: 2,
            column: 3,
            message: "float `1e999' is out of range".into()
        }
    );
}

#[test]
fn a_hash_anywhere_outside_strings_is_refused() {
    // Emacs ends a symbol at `#` and reads `#b1` as the integer 1: `foo#b1` is two atoms.
    for text in ["(foo#b1)", "(a#.(x))", "(:k#x10)"] {
        let err = read(text).unwrap_err();
        assert!(
            matches!(&err, SexpError::Syntax { message, .. } if message.contains("reader macro")),
            "{text}: {err}"
        );
    }
}

#[test]
fn control_characters_and_no_break_spaces_separate_atoms() {
    let s = read("(a\u{1}b\u{a0}c\u{c}d)").unwrap();
    assert_eq!(print(s.value()), "(a b c d)");
}

/// Found by the fuzz suite: `:` alone (the keyword with an empty name) was printed `:##`,
/// which no reader reads back.
#[test]
fn the_empty_keyword_prints_as_a_colon() {
    let s = read("(: 1)").unwrap();
    assert_eq!(print(s.value()), "(: 1)");
    assert_eq!(read(&print(s.value())).unwrap(), s);
}

/// Found by the fuzz suite: a string right after a symbol or keyword (`:a"b"`) was read
/// into the symbol's name; Emacs ends the symbol at the `"`.
#[test]
fn a_string_right_after_a_symbol_is_a_separate_atom() {
    let s = read("(:a\"b\" c\"d\")").unwrap();
    let want = Value::list(vec![
        Value::keyword("a"),
        Value::string("b"),
        Value::symbol("c"),
        Value::string("d"),
    ]);
    assert!(equal(s.value(), &want), "{s:?}");
}

/// Issue 34, found by `read_print_read_is_read_on_generated_text`: `\:` and `\:a` were read
/// as plain symbols named `:` and `:a`, printed `:` and `:a`, and read back as keywords.
/// Emacs interns a name that starts with a colon as a keyword however the colon is written:
/// `(eq '\:a :a)` is t.
#[test]
fn an_escaped_leading_colon_still_makes_a_keyword() {
    for (text, name) in [
        ("\\:", ""),
        ("\\:a", "a"),
        ("\\:A\\ B", "a b"),
        ("\\:1", "1"),
    ] {
        let v = read(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!(equal(v.value(), &kw(name)), "{text}: {v:?}");
        assert_eq!(read(&print(v.value())).unwrap(), v, "{text}");
    }
    let v = read("(a . \\:)").unwrap();
    assert_eq!(print(v.value()), "(a . :)");
    assert_eq!(read(&print(v.value())).unwrap(), v);
    // A colon after the first character is an ordinary constituent.
    let v = read("a\\:b").unwrap();
    assert!(equal(v.value(), &Value::symbol("a:b")), "{v:?}");
}

/// `equal` on floats is Emacs' `equal`: the same bits, so `-0.0` is not `0.0` and a NaN is
/// itself; integers past `i64::MAX` compare exactly, not as floats.
#[test]
fn equal_compares_floats_by_bits_and_big_integers_exactly() {
    let f = Value::from;
    assert!(!equal(&f(0.0), &f(-0.0)));
    assert!(equal(&f(-0.0), &f(-0.0)));
    assert!(equal(&f(f64::NAN), &f(f64::NAN)));
    assert!(!equal(&f(1.0), &Value::from(1i64)));
    assert!(!equal(&Value::from(u64::MAX), &Value::from(u64::MAX - 1)));
    assert!(equal(&Value::from(u64::MAX), &Value::from(u64::MAX)));
    assert!(equal(&Value::from(5u64), &Value::from(5i64)));
}
