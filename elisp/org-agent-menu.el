;;; org-agent-menu.el --- One menu for everything org-agent does -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `org-agent-menu' is a transient, from any buffer: ask and have the
;; answer where you are, rewrite the region, the chat; this buffer's
;; preset, backend and model; the notes (find, scans, search, context);
;; skills, approvals, status.  Its head says what the next turn from
;; this buffer would use.  The commands it offers are the package's
;; own, so everything it does can also be bound to a key or run with
;; M-x.

;;; Code:

(require 'org-agent-base)
(require 'org)
(require 'transient)
(require 'subr-x)
(require 'org-agent-presets)
(require 'org-agent-backends)
(require 'org-agent-here)
(require 'org-agent-context)
(require 'org-agent-mcp)

(defun org-agent-menu--focus ()
  "What the next turn from this buffer is about: the heading at point, the region."
  (string-join
   (delq nil
         (list (and (use-region-p)
                    (format "region of %d characters" (- (region-end) (region-beginning))))
               (and (derived-mode-p 'org-mode) (not (org-before-first-heading-p))
                    (format "heading %S" (org-get-heading t t t t)))
               (format "buffer %s" (buffer-name))))
   " · "))

(defun org-agent-menu--head ()
  "The menu's head: what the next turn from this buffer would use."
  (concat (propertize "org-agent" 'face 'transient-heading) "  "
          (org-agent-presets-describe) "\n"
          "about: " (org-agent-menu--focus)
          (if org-agent-context-items
              (format " · %d item%s added to the context" (length org-agent-context-items)
                      (if (cdr org-agent-context-items) "s" ""))
            "")
          "\n"
          (format "answers go: %s" (org-agent-menu--place-label))))

(defun org-agent-menu--place-label ()
  "Where `org-agent-here-ask' puts its answer from this buffer, in words."
  (pcase (org-agent-here-answer-place-here)
    ('child "under the heading at point, as a child heading")
    ('point "at point")
    ('chat "in the chat")
    (other (format "%s" other))))

(defun org-agent-menu-cycle-place ()
  "Cycle where answers go from this buffer: child heading, point, chat.
The choice holds for this buffer (`org-agent-here-answer-place')."
  (interactive)
  (let* ((places (if (derived-mode-p 'org-mode) '(child point chat) '(point chat)))
         (now (org-agent-here-answer-place-here))
         (next (or (cadr (memq now places)) (car places))))
    (setq-local org-agent-here-answer-place next)
    (message "org-agent: answers go %s" (org-agent-menu--place-label))))

(defun org-agent-menu-set-backend (name)
  "Make the backend NAME the first to try from this buffer (empty: the cascade's)."
  (interactive
   (list (if (null org-agent-backends)
             (user-error "No backend is configured (`org-agent-backends')")
           (completing-read "Backend for this buffer (empty: the cascade's first): "
                            (mapcar (lambda (b) (plist-get b :name))
                                    (seq-filter (lambda (b) (plist-get b :name))
                                                org-agent-backends))
                            nil t))))
  (setq-local org-agent-buffer-backend (and name (not (string-empty-p name)) name))
  (message "org-agent: %s" (org-agent-presets-describe)))

(defun org-agent-menu-set-model (model)
  "Make MODEL the model this buffer's first backend is asked for (empty: its own)."
  (interactive (list (read-string "Model for this buffer (empty: the backend's own): "
                                  org-agent-buffer-model)))
  (setq-local org-agent-buffer-model (and model (not (string-empty-p model)) model))
  (message "org-agent: %s" (org-agent-presets-describe)))

;;;###autoload (autoload 'org-agent-menu "org-agent-menu" nil t)
(transient-define-prefix org-agent-menu ()
  "Everything org-agent does, from the buffer you are in.
The head shows the preset, backend and model the next turn from
this buffer uses, what it is about, and where its answer goes."
  [:description org-agent-menu--head
   ["Ask"
    ("a" "Ask; answer here" org-agent-here-ask)
    ("r" "Rewrite the region" org-agent-here-rewrite)
    ("w" "Where answers go" org-agent-menu-cycle-place :transient t)
    ("s" "Summarize this buffer" org-agent-summarize-buffer)
    ("k" "Stop the agent" org-agent-interrupt)]
   ["Chat"
    ("c" "Open the chat" org-agent-chat)
    ("n" "New chat" org-agent-new-chat)
    ("x" "Preview the next request" org-agent-context-preview)
    ("z" "Compact the chat" org-agent-chat-compact)]
   ["Context you add"
    ("+" "The region, else this buffer" org-agent-context-add :transient t)
    ("F" "A file" org-agent-context-add-file :transient t)
    ("N" "A note" org-agent-context-add-note :transient t)
    ("I" "A screenshot" org-agent-context-add-screenshot :transient t)
    ("C" "List, remove" org-agent-context)]
   ["This buffer uses"
    ("p" "Preset" org-agent-preset-choose :transient t)
    ("b" "Backend" org-agent-menu-set-backend :transient t)
    ("m" "Model" org-agent-menu-set-model :transient t)
    ("M" "A backend's model, from its list" org-agent-select-model)]]
  [["Notes"
    ("f" "Find a note" org-agent-find)
    ("/" "Search by meaning" org-agent-semantic-search)
    ("S" "Run a scan" org-agent-scan)
    ("d" "Daily briefing" org-agent-daily-briefing)]
   ["Skills and review"
    ("K" "Skills" org-agent-skills)
    ("R" "Run a skill" org-agent-run-skill)
    ("A" "Approvals" org-agent-approvals)
    ("P" "Why a permission applies" org-agent-permissions-explain)]
   ["State"
    ("i" "Status" org-agent-status)
    ("l" "Log" org-agent-log)
    ("o" "MCP servers" org-agent-mcp)
    ("O" "Serve the notes over MCP" org-agent-mcp-server-mode)]])

(provide 'org-agent-menu)
;;; org-agent-menu.el ends here
