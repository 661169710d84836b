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

(add-hook 'after-save-hook #'org-agent-skills--after-save)
(add-hook 'org-agent-start-hook #'org-agent-skills-reload)

(provide 'org-agent-skills)
;;; org-agent-skills.el ends here
