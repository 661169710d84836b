//! The corpus (`tests/fixtures/markdown/cases.txt`): each case converted whole, split at
//! every point, and split at random points with a fixed seed, must give the expected Org.

use super::{to_org, OrgStream, MAX_TITLE};

/// Base level of the corpus's headings: the chat's (answers go under `* Assistant`, whose
/// steps are `** `).
const BASE: usize = 2;

struct Case {
    name: String,
    base: usize,
    markdown: String,
    org: String,
}

/// Cases as `@@@ case NAME [base=N]`, the Markdown, `@@@ org`, the Org; a case's text is
/// its lines, each with its newline, except where `@@@ no-newline` ends it.
fn corpus() -> Vec<Case> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/markdown/cases.txt"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let mut cases: Vec<Case> = Vec::new();
    let mut in_org = false;
    for line in text.split_inclusive('\n') {
        if let Some(head) = line.strip_prefix("@@@ case ") {
            let mut words = head.split_whitespace();
            let name = words.next().unwrap().to_string();
            let base = words
                .find_map(|w| w.strip_prefix("base="))
                .map_or(BASE, |n| n.parse().unwrap());
            cases.push(Case {
                name,
                base,
                markdown: String::new(),
                org: String::new(),
            });
            in_org = false;
            continue;
        }
        let case = cases.last_mut().expect("the file starts with a case");
        if line.trim_end() == "@@@ org" {
            in_org = true;
        } else if line.trim_end() == "@@@ no-newline" {
            let field = if in_org {
                &mut case.org
            } else {
                &mut case.markdown
            };
            field.pop();
        } else if in_org {
            case.org.push_str(line);
        } else {
            case.markdown.push_str(line);
        }
    }
    cases
}

fn streamed(pieces: &[&str], base: usize) -> String {
    let mut s = OrgStream::new(base);
    let mut out: String = pieces.iter().map(|p| s.push(p)).collect();
    out.push_str(&s.finish());
    out
}

#[test]
fn the_corpus_converts_as_expected() {
    let cases = corpus();
    assert!(cases.len() >= 30, "{} cases", cases.len());
    let mut wrong = Vec::new();
    for c in &cases {
        let got = to_org(&c.markdown, c.base);
        if got != c.org {
            wrong.push(format!(
                "{}:\n--- got\n{got}\n--- expected\n{}",
                c.name, c.org
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn every_split_gives_the_same_org() {
    for c in corpus() {
        let whole = to_org(&c.markdown, c.base);
        let text = c.markdown.as_str();
        let points: Vec<usize> = (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .collect();
        for &i in &points {
            let got = streamed(&[&text[..i], &text[i..]], c.base);
            assert_eq!(got, whole, "{} split at {i}", c.name);
        }
        let chars: Vec<String> = text.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(streamed(&refs, c.base), whole, "{} char by char", c.name);
        // Random splits into several pieces, with a fixed seed.
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..50 {
            let mut cuts: Vec<usize> = (0..4)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    points[(seed >> 33) as usize % points.len()]
                })
                .collect();
            cuts.sort_unstable();
            let mut pieces = Vec::new();
            let mut from = 0;
            for cut in cuts {
                pieces.push(&text[from..cut]);
                from = cut;
            }
            pieces.push(&text[from..]);
            assert_eq!(
                streamed(&pieces, c.base),
                whole,
                "{} split {pieces:?}",
                c.name
            );
        }
    }
}

#[test]
fn a_streamed_line_is_held_back_no_longer_than_it_must() {
    let mut s = OrgStream::new(BASE);
    assert_eq!(s.push("Some **bold"), "Some ");
    assert_eq!(s.push("** and more"), "*bold* and more");
    assert_eq!(s.push(" text in `co"), " text in ");
    assert_eq!(s.push("de` done"), "~code~ done");
    assert_eq!(s.push("\n```py"), "\n");
    assert_eq!(s.push("thon\nprint(1)\n"), "#+begin_src python\nprint(1)\n");
    assert_eq!(s.finish(), "#+end_src");
}

#[test]
fn a_title_waits_for_its_underline_and_no_longer() {
    let mut s = OrgStream::new(BASE);
    // The text's first line flows at once (an answer's first words show as they come).
    assert_eq!(s.push("Intro"), "Intro");
    // A paragraph's first line after it may be a Setext title: it waits for the next line.
    assert_eq!(s.push("\n\nTitle\n=="), "\n\n");
    assert_eq!(s.push("==\nBody"), "*** Title\n");
    // The body is a paragraph's first line too, until it is longer than a title can be.
    let long = "x".repeat(MAX_TITLE);
    assert_eq!(s.push(&long), format!("Body{long}"));
    assert_eq!(s.push("\n- item\n"), "\n- item\n");
    assert_eq!(s.push("\nTitle\n-"), "\n");
    // `- ` is a list item, not an underline: the title was prose.
    assert_eq!(s.push(" item"), "Title\n- item");
    assert_eq!(s.finish(), "");
}

#[test]
fn emphasis_across_lines_waits_for_its_closer_or_the_paragraphs_end() {
    let mut s = OrgStream::new(BASE);
    assert_eq!(s.push("- say **very\n"), "- say ");
    assert_eq!(s.push("  loud** words\n"), "*very\n  loud* words\n");
    assert_eq!(s.push("- a **b\n"), "- a ");
    // A new item ends the paragraph: the opener was text.
    assert_eq!(s.push("- c\n"), "**b\n- c\n");
    assert_eq!(s.push("x **y\n\n"), "x **y\n\n");
    assert_eq!(s.finish(), "");
}

#[test]
fn a_reference_holds_the_text_back_until_its_definition() {
    let mut s = OrgStream::new(BASE);
    // What comes before it flows; it and all after wait.
    assert_eq!(s.push("Read the [manual][m] "), "Read the ");
    assert_eq!(s.push("first.\n\nThen"), "");
    assert_eq!(
        s.push(" more.\n\n[m]: https://x.org/m \"Manual\"\n"),
        "[[https://x.org/m][manual]] first.\n\nThen more.\n\n\
         [m]: [[https://x.org/m][Manual]]\n"
    );
    // Defined before: a link at once, the shortcut form too.
    assert_eq!(
        s.push("See [M] and [it][m]\n\n"),
        "See [[https://x.org/m][M]] and [[https://x.org/m][it]]\n\n"
    );
    assert_eq!(s.finish(), "");
    // Never defined: the text as it was, when the step ends. The definitions stay known.
    assert_eq!(s.push("A [b **c**][none] and [m].\n"), "A ");
    assert_eq!(s.finish(), "[b *c*][none] and [[https://x.org/m][m]].\n");
}

#[test]
fn noncharacters_in_the_text_cannot_pass_for_held_links() {
    let text = "[a][b] \u{FDD0}0\u{FDD1} \u{FDD0}\n\n[b]: http://b\n";
    assert_eq!(
        to_org(text, 0),
        "[[http://b][a]] \u{FFFD}0\u{FFFD} \u{FFFD}\n\n[b]: [[http://b]]\n"
    );
}

#[test]
fn converted_prose_never_starts_an_org_element() {
    for text in [
        "a<br>* b",
        "a<br>** b",
        "a<br>#+begin_src sh",
        "a<br># comment",
        "a<br>| cell |",
        "<b>*</b> x",
        "<i>**</i> x",
        "\\# x",
        "\\#+title: x",
        "\\| x |",
        "> a<br>* b",
        "- a<br>* b",
        "* Org headline<br>* b",
        "# Heading<br>* b",
        "x **a\nb<br>* c**",
    ] {
        let org = to_org(text, 1);
        for (k, line) in org.lines().enumerate() {
            let stars = line.bytes().take_while(|&b| b == b'*').count();
            let headline = stars > 0 && line[stars..].starts_with([' ', '\t']);
            let own = text.starts_with("* ") || text.starts_with("# ");
            // The only headline is the text's own first line; the only keywords, the quote's.
            let headline_ok = !headline || (k == 0 && own);
            let keyword_ok = !line.starts_with("#+")
                || line.starts_with("#+begin_quote")
                || line.starts_with("#+end_quote");
            assert!(
                headline_ok && keyword_ok && !line.starts_with("# ") && !line.starts_with('|'),
                "{text:?} gave line {line:?} in {org:?}"
            );
        }
    }
}

#[test]
fn indented_code_holds_blank_lines_until_the_code_goes_on() {
    let mut s = OrgStream::new(BASE);
    assert_eq!(
        s.push("Run:\n\n    make\n"),
        "Run:\n\n#+begin_example\nmake\n"
    );
    assert_eq!(s.push("\n\n"), "");
    assert_eq!(s.push("    * test\n"), "\n\n,* test\n");
    assert_eq!(s.push("\nDone"), "#+end_example\n\n");
    assert_eq!(s.finish(), "Done");
}

#[test]
fn a_long_unclosed_opener_is_plain_text_and_not_quadratic() {
    let mut text = String::from("*");
    text.push_str(&"word ".repeat(200_000));
    let started = std::time::Instant::now();
    let mut s = OrgStream::new(0);
    let mut out = String::new();
    for piece in text.as_bytes().chunks(7) {
        out.push_str(&s.push(std::str::from_utf8(piece).unwrap()));
    }
    out.push_str(&s.finish());
    assert_eq!(out, text);
    assert!(started.elapsed().as_secs() < 20);
}

#[test]
fn finish_leaves_the_converter_ready_for_the_next_step() {
    let mut s = OrgStream::new(BASE);
    let first = s.push("Use `ls`:\n```sh\nls");
    assert_eq!(
        first + &s.finish(),
        "Use ~ls~:\n#+begin_src sh\nls\n#+end_src"
    );
    // Markdown was seen: a `* ` line is a bullet in the next step too.
    assert_eq!(s.push("* item\n"), "- item\n");
}

#[test]
fn random_markup_never_panics_and_splits_alike() {
    let alphabet: Vec<char> = "*_~`[]()!<>\\#|-+:. \n\nab1é>brhttps:/,=\t\u{FDD0}"
        .chars()
        .collect();
    let mut seed: u64 = 7;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize % n
    };
    for _ in 0..2000 {
        let len = next(60);
        let text: String = (0..len).map(|_| alphabet[next(alphabet.len())]).collect();
        let whole = to_org(&text, 1);
        assert!(
            !whole.contains(['\u{FDD0}', '\u{FDD1}']),
            "{text:?}: {whole:?}"
        );
        let points: Vec<usize> = (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .collect();
        for &i in &points {
            let got = streamed(&[&text[..i], &text[i..]], 1);
            assert_eq!(got, whole, "{text:?} split at {i}");
        }
    }
}

#[test]
fn openers_without_closers_cost_little() {
    for unit in [
        "[",
        "*a ",
        "_a ",
        "`",
        "![",
        "<http",
        "[[",
        "**a ",
        "*",
        "~",
        "<b>",
        "<b>\n",
        "[a][",
        "[a][b] ",
        "<a href=x>",
        "*a\n",
        "`\n",
        "[\n",
        "</i>",
        "\n\n    x",
    ] {
        let text = unit.repeat(100_000 / unit.len());
        let started = std::time::Instant::now();
        let mut s = OrgStream::new(0);
        let mut out = String::new();
        for piece in text.as_bytes().chunks(5) {
            out.push_str(&s.push(std::str::from_utf8(piece).unwrap()));
        }
        out.push_str(&s.finish());
        assert_eq!(out, to_org(&text, 0));
        // Linear in practice: well under a second in a release build for 100 KB.
        assert!(
            started.elapsed().as_secs() < 10,
            "{unit:?}: {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn random_markdown_pieces_split_alike_into_any_number_of_chunks() {
    let tokens = [
        "```",
        "```py",
        "~~~",
        "# ",
        "## ",
        "> ",
        ">",
        "| ",
        " | ",
        "|:--|",
        "---",
        "* ",
        "- ",
        "1. ",
        "  ",
        "**",
        "*",
        "_",
        "__",
        "~~",
        "`",
        "[",
        "](",
        ")",
        "![",
        "<br>",
        "<https://a.b>",
        "\\*",
        "#+begin_src sh",
        "#+end_src",
        "#+begin_quote",
        "[[id:x][y]]",
        "word",
        "a_b",
        "é",
        "\n",
        "\n",
        "\n",
        ",",
        "#",
        "+",
        "===",
        "    ",
        "\t",
        "\n\n",
        "[a]: http://a.b \"T\"",
        "[b]:",
        "[a]",
        "[x][a]",
        "[y][b]",
        "[z][]",
        "][",
        "<b>",
        "</b>",
        "<em>",
        "</em>",
        "<code>",
        "</code>",
        "<sup>",
        "</sup>",
        "<a href=\"u\">",
        "</a>",
        "&lt;",
        "<span>",
        "\\#",
        "\u{FDD0}0\u{FDD1}",
    ];
    let mut seed: u64 = 99;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize % n
    };
    for _ in 0..3000 {
        let len = next(60);
        let text: String = (0..len).map(|_| tokens[next(tokens.len())]).collect();
        let whole = to_org(&text, 2);
        assert!(
            !whole.contains(['\u{FDD0}', '\u{FDD1}']),
            "{text:?}: {whole:?}"
        );
        let points: Vec<usize> = (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .collect();
        for _ in 0..8 {
            let mut cuts: Vec<usize> = (0..next(6)).map(|_| points[next(points.len())]).collect();
            cuts.sort_unstable();
            let mut pieces = Vec::new();
            let mut from = 0;
            for cut in cuts {
                pieces.push(&text[from..cut]);
                from = cut;
            }
            pieces.push(&text[from..]);
            assert_eq!(streamed(&pieces, 2), whole, "{text:?} as {pieces:?}");
        }
    }
}

#[test]
fn an_opener_unclosed_over_many_lines_is_text_and_not_quadratic() {
    let mut text = String::from("**");
    text.push_str(&"word word word\n".repeat(100_000));
    let started = std::time::Instant::now();
    let mut s = OrgStream::new(0);
    let mut out = String::new();
    for piece in text.as_bytes().chunks(7) {
        out.push_str(&s.push(std::str::from_utf8(piece).unwrap()));
    }
    out.push_str(&s.finish());
    assert_eq!(out, text);
    assert!(started.elapsed().as_secs() < 20);
}

#[test]
fn long_random_markdown_splits_alike() {
    let tokens = [
        "word ",
        "**",
        "*",
        "`",
        "[",
        "](u)",
        "][r]",
        "[r]: http://r\n",
        "<b>",
        "</b>",
        "\n",
        "\n",
        "\n\n",
        "===\n",
        "---\n",
        "- ",
        "    ",
        "> ",
        "# ",
        "| a |",
        "<br>",
        "_",
    ];
    let mut seed: u64 = 1234;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize % n
    };
    for _ in 0..150 {
        let len = 100 + next(400);
        let text: String = (0..len).map(|_| tokens[next(tokens.len())]).collect();
        let whole = to_org(&text, 2);
        let bytes: Vec<&str> = (0..text.len()).map(|i| &text[i..i + 1]).collect();
        assert_eq!(streamed(&bytes, 2), whole, "{text:?} byte by byte");
        for _ in 0..4 {
            let mut cuts: Vec<usize> = (0..next(20)).map(|_| next(text.len() + 1)).collect();
            cuts.sort_unstable();
            let mut pieces = Vec::new();
            let mut from = 0;
            for cut in cuts {
                pieces.push(&text[from..cut]);
                from = cut;
            }
            pieces.push(&text[from..]);
            assert_eq!(streamed(&pieces, 2), whole, "{text:?} as {pieces:?}");
        }
    }
}

#[test]
fn a_reference_never_defined_stops_holding_the_answer_back() {
    let mut s = OrgStream::new(BASE);
    assert_eq!(s.push("See [it][nowhere].\n"), "See ");
    let line = "A line of the answer, long enough to count.\n";
    let mut shown = String::new();
    let mut lines = 0;
    while shown.is_empty() {
        shown = s.push(line);
        lines += 1;
        assert!(lines * line.len() < 2 * super::refs::MAX_HOLD, "still held");
    }
    assert!(shown.starts_with("[it][nowhere].\n"), "{shown:?}");
    // Defined too late: the link stays text; a later use is a link.
    s.push("\n[nowhere]: https://n.org\n\n[x][nowhere]\n");
    assert_eq!(s.finish(), "[[https://n.org][x]]\n");
}

#[test]
fn giving_up_on_a_definition_splits_alike() {
    let mut text = String::from("See [it][r] and **more\n");
    for k in 0..900 {
        text.push_str(&format!("Line {k} of [x][r] text, *some* of it.\n"));
        if k == 880 {
            text.push_str("\n[r]: https://r.org\n\n");
        }
    }
    let whole = to_org(&text, 2);
    assert!(whole.contains("[x][r] text") && whole.contains("[[https://r.org][x]]"));
    for size in [1, 2, 7, 64, 4096] {
        let pieces: Vec<&str> = text
            .as_bytes()
            .chunks(size)
            .map(|p| std::str::from_utf8(p).unwrap())
            .collect();
        assert_eq!(streamed(&pieces, 2), whole, "in pieces of {size}");
    }
}
