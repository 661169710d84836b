;;; org-agent-scans.el --- The skills' scans, shown in a buffer -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors

;; This file is not part of GNU Emacs.

;; This program is free software; you can redistribute it and/or modify
;; it under the terms of the GNU General Public License as published by
;; the Free Software Foundation, either version 3 of the License, or
;; (at your option) any later version.

;; This program is distributed in the hope that it will be useful,
;; but WITHOUT ANY WARRANTY; without even the implied warranty of
;; MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.  See the
;; GNU General Public License for more details.

;; You should have received a copy of the GNU General Public License
;; along with this program.  If not, see <https://www.gnu.org/licenses/>.

;;; Commentary:

;; The shipped skills find problems with deterministic scans over the
;; store (src/notes/scans/): duplicate ids, stuck projects, overdue
;; deadlines, broken links, pasted credentials...  The model reaches
;; them through the skills' tools; these commands show the same
;; findings to you directly, with no model involved:
;;
;; - `org-agent-scan' asks for a scan and lists what it finds, grouped
;;   by kind; RET visits a finding's headline.
;; - `org-agent-daily-briefing' shows today's schedule, deadlines,
;;   what is overdue, what was closed yesterday and what waits on
;;   others; with `org-agent-briefing-at-startup' it shows itself when
;;   org-agent starts.

;;; Code:

(require 'org-agent-base)
(require 'org-agent-store)
(require 'org)
(require 'seq)
(org-agent--declare-module-functions)

(declare-function org-agent--visit "org-agent" (file position))

(defcustom org-agent-briefing-at-startup nil
  "Non-nil: show the daily briefing when org-agent starts.
The briefing is `org-agent-daily-briefing': deterministic, read
from the store, with no model involved."
  :type 'boolean
  :group 'org-agent-scans)

(defcustom org-agent-inbox nil
  "Where captured items wait to be filed, for the inbox scan and /inbox.
A file, \"FILE::Headline\", or a headline's id.  nil: a note named
inbox.org, refile.org or notes.org, else a top-level headline titled
Inbox or Refile; else `org-default-notes-file' when it is a note."
  :type '(choice (const :tag "Found in the notes" nil)
                 (string :tag "File, FILE::Headline or id"))
  :group 'org-agent-scans)

(defun org-agent-scans--run (name file)
  "The findings of scan NAME over FILE (nil: all notes).
A scan with nothing to work on signals a `user-error' that says what
the user can set."
  (let ((inbox (and (equal name "inbox") org-agent-inbox)))
    (condition-case err
        (org-agent--scan name file inbox)
      (error
       (let ((capture (and (boundp 'org-default-notes-file) org-default-notes-file)))
         (cond
          ((not (and (equal name "inbox")
                     (string-match-p "no inbox found" (error-message-string err))))
           (signal (car err) (cdr err)))
          ((and (not inbox) capture (file-exists-p capture))
           (org-agent--scan name file (expand-file-name capture)))
          (t (user-error "No inbox found: create inbox.org in your notes, or set \
`org-agent-inbox' to your inbox (a file, FILE::Headline or a headline's id)"))))))))

(defconst org-agent-scans--briefing-headings
  '(("scheduled-today" . "Scheduled today")
    ("deadline-today" . "Due today")
    ("deadline-soon" . "Due soon")
    ("overdue" . "Overdue")
    ("closed-yesterday" . "Closed yesterday")
    ("waiting-for" . "Waiting for"))
  "Headings of the briefing's kinds, in the order they are shown.")

(defvar-local org-agent-scans--last nil
  "The scan this buffer shows, as (NAME FILE), for \\[revert-buffer].")

(define-derived-mode org-agent-scan-mode special-mode "org-agent scan"
  "Findings of an org-agent scan.
\\<org-agent-scan-mode-map>\\[org-agent-scan-visit] visits the headline of the finding at point, \\[revert-buffer] runs the scan again."
  :interactive nil
  (setq-local revert-buffer-function #'org-agent-scans--revert))

(define-key org-agent-scan-mode-map (kbd "RET") #'org-agent-scan-visit)
(define-key org-agent-scan-mode-map (kbd "n") #'next-line)
(define-key org-agent-scan-mode-map (kbd "p") #'previous-line)

(defun org-agent-scans--heading-title (kind name)
  "Return the heading under which scan NAME lists the findings of KIND."
  (or (and (equal name "daily-briefing")
           (cdr (assoc kind org-agent-scans--briefing-headings)))
      (let ((words (replace-regexp-in-string "-" " " kind)))
        (concat (upcase (substring words 0 1)) (substring words 1)))))

(defun org-agent-scans--kinds (findings name)
  "The kinds of FINDINGS of scan NAME, in the order they are shown."
  (let ((kinds (delete-dups (mapcar (lambda (f) (plist-get f :kind)) findings))))
    (if (equal name "daily-briefing")
        (append (seq-filter (lambda (k) (member k kinds))
                            (mapcar #'car org-agent-scans--briefing-headings))
                (seq-remove (lambda (k) (assoc k org-agent-scans--briefing-headings))
                            kinds))
      kinds)))

(defun org-agent-scans--insert-finding (finding)
  "Insert one line for FINDING, and its detail and fix below it."
  (let ((start (point))
        (todo (plist-get finding :todo)))
    (insert "  " (if todo (concat (propertize todo 'face 'org-todo) " ") "")
            (propertize (plist-get finding :title) 'face 'org-level-2)
            (propertize (format "  (%s)" (file-name-nondirectory (plist-get finding :file)))
                        'face 'shadow)
            "\n"
            (propertize (concat "    " (plist-get finding :detail)) 'face 'default)
            "\n")
    (when-let ((fix (plist-get finding :fix)))
      (insert (propertize (concat "    fix: " fix) 'face 'shadow) "\n"))
    (put-text-property start (point) 'org-agent-finding finding)))

(defun org-agent-scans--render (name file findings)
  "Fill the current buffer with FINDINGS of scan NAME over FILE (nil: all notes)."
  (let ((inhibit-read-only t))
    (erase-buffer)
    (insert (propertize (format "org-agent %s%s — %s\n"
                                name
                                (if file (format " (%s)" (abbreviate-file-name file)) "")
                                (format-time-string "%A %Y-%m-%d %H:%M"))
                        'face 'org-document-title))
    (if (null findings)
        (insert "\nNothing found.\n")
      (dolist (kind (org-agent-scans--kinds findings name))
        (let ((these (seq-filter (lambda (f) (equal (plist-get f :kind) kind)) findings)))
          (insert "\n" (propertize (format "%s (%d)"
                                           (org-agent-scans--heading-title kind name)
                                           (length these))
                                   'face 'org-level-1)
                  "\n")
          (mapc #'org-agent-scans--insert-finding these))))
    (goto-char (point-min))))

(defun org-agent-scans--show (name file)
  "Run scan NAME over FILE (nil: all notes), show it, return its buffer."
  (org-agent--require-started)
  (let ((findings (org-agent-scans--run name file))
        (buffer (get-buffer-create (format "*org-agent %s*" name))))
    (with-current-buffer buffer
      (org-agent-scan-mode)
      (setq org-agent-scans--last (list name file))
      (org-agent-scans--render name file findings))
    (display-buffer buffer)
    buffer))

(defun org-agent-scans--revert (&rest _)
  "Run this buffer's scan again."
  (when org-agent-scans--last
    (let ((findings (apply #'org-agent-scans--run org-agent-scans--last)))
      (apply #'org-agent-scans--render (append org-agent-scans--last (list findings))))))

;;;###autoload
(defun org-agent-scan (name &optional file)
  "List the findings of the scan NAME in the notes, grouped by kind.
NAME is one of the skills' scans, as the module names them
\(`org-agent--scan-names').
With a prefix argument, only the current buffer's FILE.  Private
notes are included: you are the one asking."
  (interactive
   (progn
     (org-agent--require-started)
     (list (completing-read "Scan: " (org-agent--scan-names) nil t)
           (and current-prefix-arg (buffer-file-name)))))
  (pop-to-buffer (org-agent-scans--show name (and file (expand-file-name file)))))

;;;###autoload
(defun org-agent-daily-briefing ()
  "Show today's briefing, read from the store with no model involved.
It lists the schedule and deadlines, what is overdue, what was
closed yesterday and what waits on others."
  (interactive)
  (pop-to-buffer (org-agent-scans--show "daily-briefing" nil)))

(defun org-agent-scan-visit ()
  "Visit the headline of the finding at point."
  (interactive nil org-agent-scan-mode)
  (let ((finding (get-text-property (point) 'org-agent-finding)))
    (unless finding
      (user-error "No finding at point"))
    (org-agent--visit (plist-get finding :file) (plist-get finding :begin))))

(defun org-agent-scans--briefing-at-startup ()
  "Show the briefing once Emacs is idle, when the user asked for it."
  (when org-agent-briefing-at-startup
    (run-with-idle-timer 1 nil #'org-agent-scans--show "daily-briefing" nil)))

(add-hook 'org-agent-start-hook #'org-agent-scans--briefing-at-startup)

(provide 'org-agent-scans)
;;; org-agent-scans.el ends here
