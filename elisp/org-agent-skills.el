;;; org-agent-skills.el --- Skills: literate Org files the agent loads -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors

;;; Commentary:

;; A skill is an Org file that teaches the agent: a prompt, gate rules,
;; tools and tests (see skills/README.org).  The module reads the skill
;; directories on a worker and keeps the active skills in dependency
;; order; every chat turn then lists them (name and description) in its
;; system prompt, lets the model load one with the `use_skill' tool, and
;; adds their gate rules after the user's policy.  Saving a skill file
;; loads the skills again.
;;
;; Skills of the Agent Skills format (NAME/SKILL.md folders, as in
;; ~/.agents/skills and ~/.claude/skills) load read-only as prompt-only
;; skills of source `imported'; `org-agent-import-skill' converts one
;; into a SKILL.org the user owns.
;;
;; Skills the agent drafts with its `create_skill' tool, once the user
;; approved them, are written to drafts/NAME/SKILL.org in the first of
;; the user's skill directories and load last, with source `agent': no
;; Elisp tools, deny and ask rules only, at least one gate test.

;;; Code:

(require 'org-agent-base)
(require 'org-agent-store)
(require 'org-agent-tools)
(require 'tabulated-list)
(require 'cl-lib)
(org-agent--declare-module-functions)

;; Defined in org-agent-runs.el, which starts the runs triggers ask for.
(defvar org-agent-shipped-skill-triggers)

;;;; Options

(defcustom org-agent-skill-directories nil
  "Directories of the user's skills, searched before the shipped ones.
Each holds NAME/SKILL.org folders or NAME.skill.org files (and
NAME/SKILL.md folders, which load as imported skills).  nil means
\"skills\" under `org-agent-state-directory' and under each of the
directories org-agent ingests (`org-agent-directories').  The
skills shipped with org-agent (the package's skills/ directory)
come after them, so a user's skill of the same name wins;
`org-agent-import-skill' writes into the first of them, and the
skills the agent drafts go to drafts/ in it."
  :type '(repeat directory)
  :group 'org-agent-skills)

(defcustom org-agent-disabled-skills nil
  "Names of skills that do not load, nor the skills that depend on them.
\\<org-agent-skills-mode-map>In `org-agent-skills', \\[org-agent-skills-disable] and \\[org-agent-skills-enable] change it."
  :type '(repeat string)
  :group 'org-agent-skills)

(defcustom org-agent-skill-import-directories
  '("~/.agents/skills" "~/.claude/skills")
  "Directories of Agent Skills (NAME/SKILL.md folders) to load read-only.
Their skills are prompt only: no tools, no gate rules, and their
scripts never run.  They come after the user's and the shipped
skills, so those win over an imported skill of the same name."
  :type '(repeat directory)
  :group 'org-agent-skills)

;;;; State

(defvar org-agent-skills--active nil
  "The active skills, as the module last reported them.
Each is a plist (:name :description :file :source :triggers :tests-passed
:elisp-tools).")

(defun org-agent-skills-active ()
  "Return the active skills, as the module last reported them.
Each is a plist (:name :description :file :source :triggers :tests-passed
:elisp-tools).  Nil until the skills are loaded."
  org-agent-skills--active)

(defvar org-agent-skills--inactive nil
  "The skills (or files) that are not active, as (NAME . REASON).")

(defvar org-agent-skills--inactive-skills nil
  "The skills that are not active, as plists (:name :file :reason).
Each `org-agent-skills--inactive' entry with both its name and its
file: the module names a skill that did not load by its file when the
file did not read or its tests failed, and by its name when its
dependencies kept it out or the user disabled it.")

;;;; Shipped skills' triggers

(defconst org-agent-skills--background-triggers
  '(save todo-change capture cron every idle startup)
  "The :ON: words that start a run with nobody waiting.")

(defun org-agent-skills--shipped-triggers ()
  "The shipped skills whose triggers fire: a list of names, or t for all."
  (and (boundp 'org-agent-shipped-skill-triggers) org-agent-shipped-skill-triggers))

(defun org-agent-skills--triggers-off (skill)
  "The :ON: words of SKILL (a plist) that start nothing.
A shipped skill's background triggers fire only when
`org-agent-shipped-skill-triggers' names it."
  (let ((shipped (org-agent-skills--shipped-triggers)))
    (and (eq (plist-get skill :source) 'shipped)
         (not (eq shipped t))
         (not (member (plist-get skill :name) shipped))
         (seq-filter (lambda (on) (memq on org-agent-skills--background-triggers))
                     (plist-get skill :triggers)))))

(defun org-agent-skills--send-shipped-triggers ()
  "Tell the module which shipped skills' triggers fire."
  (when org-agent--started
    (org-agent--set-shipped-triggers (org-agent-skills--shipped-triggers))))

(defun org-agent-skills--shipped-triggers-changed (_symbol value operation _where)
  "Tell the module VALUE, the new `org-agent-shipped-skill-triggers'.
OPERATION is what changed it; a `let' ending is a change too."
  (when (and org-agent--started (not (eq operation 'makunbound)))
    (org-agent--set-shipped-triggers value)))

(defun org-agent-skills--user-directories ()
  "Return the user's skill directories (`org-agent-skill-directories'), expanded."
  (mapcar #'expand-file-name
          (or org-agent-skill-directories
              (mapcar (lambda (dir) (expand-file-name "skills" dir))
                      (cons org-agent-state-directory (org-agent--directories))))))

(defun org-agent-skills--drafts-directory ()
  "Return the directory of the skills the agent drafts (`create_skill').
It is \"drafts\" in the first of the user's skill directories."
  (expand-file-name "drafts" (car (org-agent-skills--user-directories))))

(defun org-agent-skills-draft-file (name)
  "Return the file the agent's draft of the skill NAME is written to."
  (expand-file-name (concat name "/SKILL.org") (org-agent-skills--drafts-directory)))

(defun org-agent-skills-loaded (name)
  "Return the active skill named NAME (a plist), or nil."
  (seq-find (lambda (skill) (equal (plist-get skill :name) name))
            org-agent-skills--active))

(defun org-agent-skills--directories ()
  "Return the skill directories as the module takes them: ((DIR . SOURCE) ...).
An import directory that is also a user's skill directory is listed
once, as the user's.  The agent's drafts come last, with source
`agent': every other skill of the same name wins over a draft."
  (let ((user (org-agent-skills--user-directories)))
    (append (mapcar (lambda (dir) (cons dir 'user)) user)
            (list (cons (expand-file-name "skills" org-agent--source-directory) 'shipped))
            (delq nil (mapcar (lambda (dir)
                                (let ((dir (expand-file-name dir)))
                                  (unless (member (file-name-as-directory dir)
                                                  (mapcar #'file-name-as-directory user))
                                    (cons dir 'imported))))
                              org-agent-skill-import-directories))
            (list (cons (org-agent-skills--drafts-directory) 'agent)))))

;;;; Loading

(defun org-agent-skills--loaded (event &optional callback)
  "Keep the skills of the skills-loaded EVENT and tell the user of failures.
Then call CALLBACK, if given, with EVENT."
  (if (eq (plist-get event :type) 'failed)
      (message "org-agent: loading the skills failed: %s" (plist-get event :message))
    (setq org-agent-skills--active (plist-get event :active)
          org-agent-skills--inactive (plist-get event :inactive)
          org-agent-skills--inactive-skills
          (org-agent-skills--name-and-file org-agent-skills--inactive))
    (when org-agent-skills--inactive
      (message "org-agent: %d skills active; not active: %s"
               (length org-agent-skills--active)
               (mapconcat (lambda (pair) (cdr pair)) org-agent-skills--inactive "; ")))
    (when-let ((problems (org-agent-tools-define-skill-tools org-agent-skills--active)))
      (message "org-agent: %s" (mapconcat #'identity problems "; "))))
  (when callback (funcall callback event)))

;;;###autoload
(defun org-agent-skills--declared-name (file)
  "Return the skill name FILE declares, or nil.
That is its #+SKILL_NAME:, or a SKILL.md's name:."
  (with-temp-buffer
    (condition-case nil
        (insert-file-contents file nil 0 16384)
      (file-error nil))
    (let ((case-fold-search t))
      (when (re-search-forward (if (string-suffix-p ".md" file)
                                   "^name:[ \t]*[\"']?\\([^\"'\n]*?\\)[\"']?[ \t]*$"
                                 "^#\\+SKILL_NAME:[ \t]*\\(.*?\\)[ \t]*$")
                               nil t)
        (let ((name (match-string 1)))
          (unless (string-empty-p name) name))))))

(defun org-agent-skills--files ()
  "Return the skill files of the skill directories as (FILE . NAME).
They are those the module reads, in its order: the directories in
turn, each sorted, NAME/SKILL.org (else NAME/SKILL.md) folders and
NAME.skill.org files.  NAME is the name the file declares, or nil."
  (let (out)
    (dolist (dir (mapcar #'car (org-agent-skills--directories)))
      (when (file-directory-p dir)
        (dolist (entry (directory-files dir t "\\`[^.]"))
          (when-let ((file (if (file-directory-p entry)
                               (seq-find #'file-regular-p
                                         (list (expand-file-name "SKILL.org" entry)
                                               (expand-file-name "SKILL.md" entry)))
                             (and (string-suffix-p ".skill.org" entry) entry))))
            (push (cons file (org-agent-skills--declared-name file)) out)))))
    (nreverse out)))

(defun org-agent-skills--name-and-file (inactive)
  "INACTIVE, a list of (NAME-OR-FILE . REASON), as plists (:name :file :reason).
A skill named without its file is the first file of that name the
module reads; a file without a name it declares is named after its
folder (NAME/SKILL.org) or itself (NAME.skill.org)."
  (let ((files (and inactive (org-agent-skills--files))))
    (mapcar
     (lambda (pair)
       (let ((key (car pair)))
         (if (file-name-absolute-p key)
             (list :name (or (cdr (assoc key files))
                             (let ((base (file-name-nondirectory key)))
                               (if (member base '("SKILL.org" "SKILL.md"))
                                   (file-name-nondirectory
                                    (directory-file-name (file-name-directory key)))
                                 (string-remove-suffix ".skill.org" base))))
                   :file key
                   :reason (cdr pair))
           (list :name key :file (car (rassoc key files)) :reason (cdr pair)))))
     inactive)))

(defun org-agent-skills-reload (&optional callback)
  "Load the skills of `org-agent-skill-directories' and the shipped ones again.
They replace the active skills for the turns that start afterwards.
CALLBACK, if given, is called with the module's report (a plist
with :active and :inactive).  Return the request id."
  (interactive)
  (org-agent--require-started)
  (org-agent-skills--send-shipped-triggers)
  (let ((request (org-agent--load-skills (org-agent-skills--directories)
                                         org-agent-disabled-skills)))
    (puthash request (lambda (event) (org-agent-skills--loaded event callback))
             org-agent--callbacks)
    request))

(defun org-agent-skills-list ()
  "Return every skill as a plist.
Its keys are :name :description :file :source :status :reason
:triggers :triggers-off :tests-passed :tests-failed :runs :failures
:last-run :seconds.  :source is `user', `shipped', `imported' or `agent' (nil
for a skill that did not load); :status is `active', `suspended'
\(it failed too often in a row: :reason says how), `disabled'
\(`org-agent-disabled-skills') or `failed' (:reason says why: its
file, its tests or its dependencies); :triggers are its :ON: words,
:triggers-off those that start nothing (a shipped skill's, unless
`org-agent-shipped-skill-triggers' names it);
:runs and :failures count its background runs, :last-run is when
the last ended (seconds since the epoch)."
  (let ((stats (and org-agent--started (org-agent--skill-stats))))
    (mapcar
     (lambda (skill)
       (let* ((run (seq-find (lambda (s) (equal (plist-get s :name) (plist-get skill :name)))
                             stats))
              (suspended (plist-get run :suspended)))
         ;; First, so that `plist-get' finds them before the skill's own.
         (append (and suspended (list :status 'suspended :reason suspended))
                 skill
                 (list :triggers-off (org-agent-skills--triggers-off skill)
                       :runs (or (plist-get run :runs) 0)
                       :failures (or (plist-get run :failures) 0)
                       :last-run (plist-get run :last-run)
                       :seconds (or (plist-get run :seconds) 0)))))
     (append (mapcar (lambda (s) (append s (list :status 'active :reason nil :tests-failed 0)))
                     org-agent-skills--active)
             (mapcar (lambda (skill)
                       (let ((reason (plist-get skill :reason)))
                         (list :name (plist-get skill :name) :description nil
                               :file (plist-get skill :file) :source nil
                               :status (if (string-prefix-p "disabled" reason)
                                           'disabled
                                         'failed)
                               :reason reason :triggers nil
                               :tests-passed nil
                               :tests-failed (and (string-match-p " test " reason) 1))))
                     org-agent-skills--inactive-skills)))))

(defun org-agent-skills--skill-file-p (file)
  "Return non-nil when FILE is a skill file.
That is NAME.skill.org, SKILL.org, or a SKILL.md in a folder of a
skill directory."
  (let ((name (file-name-nondirectory file)))
    (or (string= name "SKILL.org") (string-suffix-p ".skill.org" name)
        (and (string= name "SKILL.md")
             (member (file-name-directory (directory-file-name (file-name-directory file)))
                     (mapcar (lambda (dir) (file-name-as-directory (car dir)))
                             (org-agent-skills--directories)))))))

;;;; Importing

(defun org-agent-skills--folder-name (file)
  "Return the name of the skill folder FILE, or of the folder FILE is in."
  (file-name-nondirectory
   (directory-file-name
    (if (file-directory-p file) file (file-name-directory file)))))

;;;###autoload
(defun org-agent-import-skill (file)
  "Convert the Agent Skills SKILL.md FILE into an Org skill and open it.
FILE may also be the folder that holds the SKILL.md.  The skill
is written as NAME/SKILL.org into the first of the user's skill
directories (see `org-agent-skill-directories'), asking before it
replaces a file there; the skills are then loaded again.  Its
Markdown body is kept verbatim in a markdown source block, its
references/*.md become reference parts, and its allowed-tools
become ask rules (a skill never allows).  Return the new file."
  (interactive (list (read-file-name "Import the Agent Skill (SKILL.md or its folder): "
                                     nil nil t)))
  (org-agent--require-started)
  (let* ((file (expand-file-name file))
         (org (org-agent--import-skill file))
         (target (expand-file-name
                  (concat (org-agent-skills--folder-name file) "/SKILL.org")
                  (car (org-agent-skills--user-directories)))))
    (when (and (file-exists-p target)
               (not (yes-or-no-p (format "Replace %s? " target))))
      (user-error "Not imported: %s exists" target))
    (make-directory (file-name-directory target) t)
    (let ((coding-system-for-write 'utf-8-unix))
      (write-region org nil target nil 'silent))
    (org-agent-skills-reload)
    (when (called-interactively-p 'interactive)
      (find-file target))
    target))

(defun org-agent-skills--after-save ()
  "Load the skills again when a skill file was saved."
  (when (and org-agent--started buffer-file-name
             (org-agent-skills--skill-file-p buffer-file-name))
    (org-agent-skills-reload)))

;;;; The list of skills

(defvar org-agent-skills-buffer-name "*org-agent-skills*"
  "Name of the buffer `org-agent-skills' shows.")

(defvar org-agent-skills-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tabulated-list-mode-map)
    (define-key map (kbd "RET") #'org-agent-skills-visit)
    (define-key map "o" #'org-agent-skills-visit)
    (define-key map "g" #'org-agent-skills-refresh)
    (define-key map "t" #'org-agent-skills-refresh)
    (define-key map "r" #'org-agent-skills-run)
    (define-key map "d" #'org-agent-skills-disable)
    (define-key map "e" #'org-agent-skills-enable)
    map)
  "Keys of the list of skills.")

(define-derived-mode org-agent-skills-mode tabulated-list-mode "org-agent skills"
  "The skills org-agent knows, active or not, with why.
\\<org-agent-skills-mode-map>\\[org-agent-skills-visit] opens a skill's file;
\\[org-agent-skills-refresh] loads the skills again (running their tests);
\\[org-agent-skills-run] runs the skill at point now, in the background;
\\[org-agent-skills-disable] disables it, \\[org-agent-skills-enable] enables it."
  :interactive nil
  (setq tabulated-list-format
        [("Skill" 22 t) ("Status" 10 t) ("Source" 9 t) ("Triggers" 24 t)
         ("Last run" 12 t) ("Runs/fail" 9 t) ("Time" 7 t)
         ("What it is for, or why it is not active" 0 nil)])
  (setq tabulated-list-sort-key nil)
  (tabulated-list-init-header))

(defun org-agent-skills--triggers-text (skill)
  "The Triggers column of SKILL: its :ON: words, those that start nothing marked."
  (let ((off (plist-get skill :triggers-off)))
    (mapconcat (lambda (on)
                 (if (memq on off) (format "%s(off)" on) (symbol-name on)))
               (plist-get skill :triggers) " ")))

(defun org-agent-skills--what (skill)
  "The last column of SKILL: what it is for, or why it is not active.
An active skill whose triggers start nothing says so."
  (if (not (eq (plist-get skill :status) 'active))
      (or (plist-get skill :reason) "")
    (concat (or (plist-get skill :description) "")
            (when-let ((off (plist-get skill :triggers-off)))
              (format " [%s: not enabled, see org-agent-shipped-skill-triggers]"
                      (mapconcat #'symbol-name off " "))))))

(defun org-agent-skills--entries ()
  "Return the list's entries: one per skill, (FILE . NAME) as the entry's id."
  (mapcar (lambda (s)
            (let ((last (plist-get s :last-run)))
              (list (cons (plist-get s :file) (plist-get s :name))
                    (vector (plist-get s :name)
                            (symbol-name (plist-get s :status))
                            (symbol-name (or (plist-get s :source) '-))
                            (org-agent-skills--triggers-text s)
                            (if last (format-time-string "%m-%d %R" last) "")
                            (format "%d/%d" (plist-get s :runs) (plist-get s :failures))
                            (format "%.1fs" (plist-get s :seconds))
                            (org-agent-skills--what s)))))
          (org-agent-skills-list)))

(defun org-agent-skills--name-at-point ()
  "The name of the skill at point."
  (let ((entry (tabulated-list-get-entry)))
    (or (and entry (aref entry 0)) (user-error "No skill here"))))

(defun org-agent-skills-run ()
  "Run the skill at point now, in the background."
  (interactive nil org-agent-skills-mode)
  (let ((name (org-agent-skills--name-at-point)))
    (if (fboundp 'org-agent-skill-run)
        (progn (funcall 'org-agent-skill-run name nil "M-x org-agent-skills")
               (message "org-agent: %s runs; its proposals go to M-x org-agent-approvals" name))
      (user-error "Skill runs need org-agent-runs"))))

(defun org-agent-skills--set-disabled (names)
  "Make NAMES the disabled skills, for good when the custom file can be written."
  (condition-case nil
      (customize-save-variable 'org-agent-disabled-skills names)
    (error (customize-set-variable 'org-agent-disabled-skills names)))
  (org-agent-skills-refresh))

(defun org-agent-skills-disable ()
  "Disable the skill at point (and the skills that depend on it)."
  (interactive nil org-agent-skills-mode)
  (let ((name (org-agent-skills--name-at-point)))
    (org-agent-skills--set-disabled (cl-adjoin name org-agent-disabled-skills :test #'equal))))

(defun org-agent-skills-enable ()
  "Enable the skill at point again."
  (interactive nil org-agent-skills-mode)
  (let ((name (org-agent-skills--name-at-point)))
    (unless (member name org-agent-disabled-skills)
      (user-error "%s is not disabled" name))
    (org-agent-skills--set-disabled (remove name org-agent-disabled-skills))))

(defun org-agent-skills--show ()
  "Fill the list of skills from what the module last reported."
  (with-current-buffer (get-buffer-create org-agent-skills-buffer-name)
    (unless (derived-mode-p 'org-agent-skills-mode)
      (org-agent-skills-mode))
    (setq tabulated-list-entries (org-agent-skills--entries))
    (tabulated-list-print t)
    (current-buffer)))

;;;###autoload
(defun org-agent-skills ()
  "List every skill: name, whether it is active, what it is for or why it is not."
  (interactive)
  (org-agent--require-started)
  (pop-to-buffer (org-agent-skills--show)))

(defun org-agent-skills-refresh ()
  "Load the skills again, then show the list anew."
  (interactive nil org-agent-skills-mode)
  (org-agent-skills-reload (lambda (_event) (org-agent-skills--show))))

(defun org-agent-skills-visit ()
  "Open the file of the skill at point."
  (interactive nil org-agent-skills-mode)
  (let ((file (car (tabulated-list-get-id))))
    (if (and file (file-exists-p file))
        (find-file file)
      (user-error "No skill file here"))))

(defun org-agent-skills--start ()
  "Load the skills, and load them again whenever a skill file is saved.
Run when org-agent starts, so that loading this file changes no hook
of Emacs itself."
  (add-hook 'after-save-hook #'org-agent-skills--after-save)
  (add-variable-watcher 'org-agent-shipped-skill-triggers
                        #'org-agent-skills--shipped-triggers-changed)
  ;; Skills triggered at start-up need to be loaded first.
  (org-agent-skills-reload
   (lambda (event)
     (unless (eq (plist-get event :type) 'failed)
       (org-agent--fire-trigger 'startup nil nil)))))

(add-hook 'org-agent-start-hook #'org-agent-skills--start)

(provide 'org-agent-skills)
;;; org-agent-skills.el ends here
