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

;;; Code:

(require 'org-agent-base)
(require 'org-agent-store)
(require 'tabulated-list)
(org-agent--declare-module-functions)

;;;; Options

(defcustom org-agent-skill-directories nil
  "Directories of the user's skills, searched before the shipped ones.
Each holds NAME/SKILL.org folders or NAME.skill.org files.  nil
means \"skills\" under `org-agent-state-directory'.  The skills
shipped with org-agent (the package's skills/ directory) always
come last, so a user's skill of the same name wins."
  :type '(repeat directory)
  :group 'org-agent)

;;;; State

(defvar org-agent-skills--active nil
  "The active skills, as the module last reported them.
Each is a plist (:name :description :file).")

(defvar org-agent-skills--inactive nil
  "The skills (or files) that are not active, as (NAME . REASON).")

(defun org-agent-skills--directories ()
  "Return the skill directories as the module takes them: ((DIR . SOURCE) ...)."
  (append (mapcar (lambda (dir) (cons (expand-file-name dir) 'user))
                  (or org-agent-skill-directories
                      (list (expand-file-name "skills" org-agent-state-directory))))
          (list (cons (expand-file-name "skills" org-agent--source-directory) 'shipped))))

;;;; Loading

(defun org-agent-skills--loaded (event &optional callback)
  "Keep the skills of the skills-loaded EVENT and tell the user of failures.
Then call CALLBACK, if given, with EVENT."
  (if (eq (plist-get event :type) 'failed)
      (message "org-agent: loading the skills failed: %s" (plist-get event :message))
    (setq org-agent-skills--active (plist-get event :active)
          org-agent-skills--inactive (plist-get event :inactive))
    (when org-agent-skills--inactive
      (message "org-agent: %d skills active; not active: %s"
               (length org-agent-skills--active)
               (mapconcat (lambda (pair) (cdr pair)) org-agent-skills--inactive "; "))))
  (when callback (funcall callback event)))

;;;###autoload
(defun org-agent-skills-reload (&optional callback)
  "Load the skills of `org-agent-skill-directories' and the shipped ones again.
They replace the active skills for the turns that start afterwards.
CALLBACK, if given, is called with the module's report (a plist
with :active and :inactive).  Return the request id."
  (interactive)
  (org-agent--require-started)
  (let ((request (org-agent--load-skills (org-agent-skills--directories))))
    (puthash request (lambda (event) (org-agent-skills--loaded event callback))
             org-agent--callbacks)
    request))

(defun org-agent-skills-list ()
  "Return every skill as a plist: (:name :description :file :status :reason).
:status is `active' or `inactive'; :reason says why a skill is not active."
  (append (mapcar (lambda (s) (append s (list :status 'active :reason nil)))
                  org-agent-skills--active)
          (mapcar (lambda (pair)
                    (list :name (car pair) :description nil :file nil
                          :status 'inactive :reason (cdr pair)))
                  org-agent-skills--inactive)))

(defun org-agent-skills--skill-file-p (file)
  "Return non-nil when FILE is a skill file: NAME.skill.org or SKILL.org."
  (let ((name (file-name-nondirectory file)))
    (or (string= name "SKILL.org") (string-suffix-p ".skill.org" name))))

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
    map)
  "Keys of the list of skills.")

(define-derived-mode org-agent-skills-mode tabulated-list-mode "org-agent skills"
  "The skills org-agent knows, active or not, with why.
\\<org-agent-skills-mode-map>\\[org-agent-skills-visit] opens a skill's file;
\\[org-agent-skills-refresh] loads the skills again."
  (setq tabulated-list-format
        [("Skill" 24 t) ("Status" 9 t) ("What it is for, or why it is not active" 0 nil)])
  (setq tabulated-list-sort-key nil)
  (tabulated-list-init-header))

(defun org-agent-skills--entries ()
  "Return the list's entries: one per skill, the file as the entry's id."
  (mapcar (lambda (s)
            (let ((active (eq (plist-get s :status) 'active)))
              (list (or (plist-get s :file) (plist-get s :name))
                    (vector (plist-get s :name)
                            (if active "active" "inactive")
                            (or (if active (plist-get s :description) (plist-get s :reason))
                                "")))))
          (org-agent-skills-list)))

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
  (interactive)
  (org-agent-skills-reload (lambda (_event) (org-agent-skills--show))))

(defun org-agent-skills-visit ()
  "Open the file of the skill at point."
  (interactive)
  (let ((file (tabulated-list-get-id)))
    (if (and file (file-exists-p file))
        (find-file file)
      (user-error "No skill file here"))))

(defun org-agent-skills--start ()
  "Load the skills, and load them again whenever a skill file is saved.
Run when org-agent starts, so that loading this file changes no hook
of Emacs itself."
  (add-hook 'after-save-hook #'org-agent-skills--after-save)
  (org-agent-skills-reload))

(add-hook 'org-agent-start-hook #'org-agent-skills--start)

(provide 'org-agent-skills)
;;; org-agent-skills.el ends here
