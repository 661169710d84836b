//! Loading the skills on a worker: the skills found replace the active ones (less those the
//! user disabled, and their dependants), suspended skills get another chance, and the
//! schedule starts when a skill runs on one. Reading and checking the skill files is
//! `crate::skills::load`'s; this only decides what becomes active and tells Emacs.

use super::event::{Event, SkillSummary};
use super::runtime::Runtime;
use crate::skills::{load::load_dirs, On, Skill, Source};
use std::path::PathBuf;
use std::sync::Arc;

/// Move the skills the user disabled, and those that depend on them, to the inactive ones.
fn disable(loaded: &mut crate::skills::load::Loaded, disabled: &[String]) {
    let mut off: Vec<String> = disabled.to_vec();
    // Dependants follow their dependencies (the skills are in dependency order).
    for s in &loaded.active {
        if !off.contains(&s.name) && s.depends_on.iter().any(|d| off.contains(d)) {
            off.push(s.name.clone());
        }
    }
    let (keep, gone): (Vec<Skill>, Vec<Skill>) = std::mem::take(&mut loaded.active)
        .into_iter()
        .partition(|s| !off.contains(&s.name));
    loaded.active = keep;
    for s in gone {
        let why = if disabled.contains(&s.name) {
            "disabled (org-agent-disabled-skills)".to_string()
        } else {
            format!("disabled: it depends on {}", s.depends_on.join(", "))
        };
        loaded.inactive.insert(s.name.clone(), why);
    }
}

impl Runtime {
    /// Load the skills of `dirs` (each with the source of its skills) on a worker; they
    /// replace the active ones, and an [`Event::SkillsLoaded`] reports what is active and
    /// what is not, with why. Returns the request id at once.
    pub fn load_skills_async(
        &'static self,
        dirs: Vec<(PathBuf, Source)>,
        disabled: Vec<String>,
    ) -> u64 {
        let request = self.next_id();
        self.run_async(request, |_cancel| async move {
            let previous = self.skills();
            let mut loaded = tokio::task::spawn_blocking(move || load_dirs(&dirs, &previous))
                .await
                .map_err(|e| format!("loading the skills failed: {e}"))?;
            disable(&mut loaded, &disabled);
            let active: Vec<SkillSummary> = loaded.active.iter().map(SkillSummary::of).collect();
            self.set_skills(Arc::from(loaded.active));
            // Their authors may have fixed what suspended them.
            self.runs().resume_all();
            if self.skills().iter().any(|s| {
                s.trigger
                    .on
                    .iter()
                    .any(|on| matches!(on, On::Cron | On::Every))
            }) {
                self.ensure_scheduler();
            }
            self.with_telemetry(|t| {
                t.log(
                    "skills",
                    format!(
                        "{} active, {} inactive",
                        active.len(),
                        loaded.inactive.len()
                    ),
                )
            });
            Ok(Event::SkillsLoaded {
                request,
                active,
                inactive: loaded.inactive.into_iter().collect(),
            })
        })
    }
}
