//! What the user added to a conversation's context — a region, a buffer, a file, a note —
//! shown as the notes layer shows any text: a private note absent (refused as an unknown
//! one), a private file or subtree cut, secrets and withheld properties replaced. Text from
//! outside the notes is untrusted, so that an edit after reading it asks, as after a tool
//! read it.

use super::spotlight::{Source, Spotlight};
use crate::llm::Image;
use crate::notes::paths::names_protected;
use crate::notes::Notes;
use base64::Engine as _;

/// The largest image a request may carry, in bytes (providers refuse larger ones).
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

/// An item as Emacs gives it: a label for the user, and a note id, or a text with the file
/// it is from (none for a buffer with no file).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GivenItem {
    pub label: String,
    pub id: Option<String>,
    pub file: Option<String>,
    pub text: Option<String>,
    /// An image file to send as an image.
    pub image: Option<String>,
}

/// An item as the model may see it.
#[derive(Debug, Clone, PartialEq)]
pub struct AddedItem {
    pub label: String,
    pub text: String,
    /// Why the model must not take the text as the user's own words (`None`: a note the
    /// user wrote).
    pub untrusted: Option<String>,
    /// The image, for an image item (its text is then empty).
    pub image: Option<Image>,
}

/// `given` as the notes show it, or why it is left out (words for the user, not the model).
pub fn shown(notes: &Notes, given: &GivenItem) -> Result<AddedItem, String> {
    let label = given.label.clone();
    if let Some(path) = &given.image {
        return image(notes, label, path);
    }
    if let Some(id) = &given.id {
        let node = notes
            .node(id)
            .map_err(|_| format!("{label}: no such note (or a private one): left out"))?;
        return Ok(AddedItem {
            text: notes.render(&node),
            untrusted: notes.untrusted(&node),
            label,
            image: None,
        });
    }
    let Some(text) = &given.text else {
        return Err(format!("{label}: no text was given: left out"));
    };
    match &given.file {
        Some(file) => match notes.text_as_shown(file, text) {
            Some(shown) => Ok(AddedItem {
                text: shown,
                untrusted: notes.path_provenance(file),
                label,
                image: None,
            }),
            None => Err(format!(
                "{label} is private (org-agent-private-files or its tags): left out"
            )),
        },
        None => Ok(AddedItem {
            text: notes.clean_text(text),
            untrusted: Some(format!("{label} (added by the user; not a note)")),
            label,
            image: None,
        }),
    }
}

/// The image file at `path` as an item: refused when the file is private or protected (an
/// image cannot be redacted), too large, or not an image the providers take.
fn image(notes: &Notes, label: String, path: &str) -> Result<AddedItem, String> {
    let media_type = Image::media_type_of(path)
        .ok_or_else(|| format!("{label}: not a PNG, JPEG, GIF or WebP image: left out"))?;
    let real = std::fs::canonicalize(path).ok();
    let real_str = real.as_deref().and_then(|p| p.to_str()).unwrap_or(path);
    if notes.hides_path(path)
        || notes.hides_path(real_str)
        || names_protected(std::path::Path::new(path))
        || real.as_deref().is_some_and(names_protected)
    {
        return Err(format!("{label} is private or protected: left out"));
    }
    let size = std::fs::metadata(path)
        .map_err(|e| format!("{label}: cannot be read ({e}): left out"))?
        .len();
    if size > MAX_IMAGE_BYTES {
        return Err(format!(
            "{label} is {size} bytes, more than the {MAX_IMAGE_BYTES} an image may be: left out"
        ));
    }
    let bytes =
        std::fs::read(path).map_err(|e| format!("{label}: cannot be read ({e}): left out"))?;
    Ok(AddedItem {
        text: String::new(),
        untrusted: Some(format!("the image {label} (added by the user)")),
        image: Some(Image {
            media_type: media_type.to_owned(),
            base64: base64::engine::general_purpose::STANDARD.encode(bytes),
        }),
        label,
    })
}

/// The items `given` as the model may see them, and a line for the user on each left out.
pub fn shown_all(notes: &Notes, given: &[GivenItem]) -> (Vec<AddedItem>, Vec<String>) {
    let mut items = Vec::new();
    let mut left_out = Vec::new();
    for g in given {
        match shown(notes, g) {
            Ok(item) => items.push(item),
            Err(why) => left_out.push(why),
        }
    }
    (items, left_out)
}

/// The items for a request's system prompt, each in a block of `spot`'s, within
/// `budget_bytes` in all: an item that does not fit whole is cut, saying so, and those after
/// it are named only. Empty when there are none.
pub fn render(items: &[AddedItem], spot: &Spotlight, budget_bytes: usize) -> String {
    if items.is_empty() {
        return String::new();
    }
    let mut out = String::from("The user added these to the conversation's context:\n");
    let mut left = budget_bytes;
    for item in items {
        if left == 0 {
            out.push_str(&format!(
                "- {} (left out: the context budget is spent)\n",
                item.label
            ));
            continue;
        }
        if item.image.is_some() {
            out.push_str(&spot.wrap(
                Source::Added(&item.label),
                "[an image: it is attached to this request]",
            ));
            continue;
        }
        let text = if item.text.len() <= left {
            left -= item.text.len();
            item.text.clone()
        } else {
            let mut end = left;
            while !item.text.is_char_boundary(end) {
                end -= 1;
            }
            left = 0;
            format!(
                "{}\n[cut here to fit the context budget: {end} of its {} bytes are shown]",
                &item.text[..end],
                item.text.len()
            )
        };
        out.push_str(&spot.wrap(Source::Added(&item.label), &text));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(label: &str, text: &str) -> AddedItem {
        AddedItem {
            label: label.into(),
            text: text.into(),
            untrusted: None,
            image: None,
        }
    }

    #[test]
    fn items_are_blocks_cut_to_the_budget() {
        let spot = Spotlight::from_bytes([7; 16]);
        let text = render(
            &[item("a.org", "alpha"), item("b", "ééé"), item("c", "z")],
            &spot,
            8,
        );
        assert!(text.starts_with("The user added these"), "{text}");
        assert!(text.contains("added=\"a.org\">>\nalpha\n"), "{text}");
        // Three bytes were left: one "é" (two bytes) fits, never half of one.
        assert!(
            text.contains("é\n[cut here to fit the context budget: 2 of its 6 bytes"),
            "{text}"
        );
        assert!(
            text.contains("- c (left out: the context budget is spent)"),
            "{text}"
        );
        assert_eq!(render(&[], &spot, 100), "");
    }
}
