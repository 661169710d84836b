//! The corpus (`tests/fixtures/markdown/cases.txt`): each case converted whole, split at
//! every point, and split at random points with a fixed seed, must give the expected Org.

use super::{to_org, OrgStream};

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
    let alphabet: Vec<char> = "*_~`[]()!<>\\#|-+:. \n\nab1é>brhttps:/,".chars().collect();
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
        "[", "*a ", "_a ", "`", "![", "<http", "[[", "**a ", "*", "~",
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
