;;; org-agent-presets.el --- Named bundles of turn settings, chosen where you work -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A preset is a named bundle of settings for a turn: which backend
;; and model answer, a system text, temperature, answer length, whether
;; tools are offered, a skill to use.  One is chosen, most specific
;; first, by:
;;
;; 1. "@NAME" in the message itself (the word is taken out of it);
;; 2. the Org property ORG_AGENT_PRESET of the heading at point, or
;;    of an ancestor, or of the file (#+PROPERTY: ORG_AGENT_PRESET NAME);
;; 3. `org-agent-preset', set for one buffer (a chat or a note) with
;;    `org-agent-preset-choose' or the menu.
;;
;; Besides presets, a buffer may name its own backend and model
;; (`org-agent-buffer-backend', `org-agent-buffer-model'); those beat a
;; preset's.  The backends' cascade (org-agent-backends.el) asks
;; `org-agent-presets-backend' which backend to try first; a turn's
;; options take `org-agent-presets-options' first.

;;; Code:

(require 'org-agent-base)
(require 'org)
(require 'cl-lib)
(require 'subr-x)

(defcustom org-agent-presets nil
  "Named bundles of settings for a turn, as ((NAME . PLIST) ...).
PLIST may have:
  :backend NAME     the entry of `org-agent-backends' tried first
                    (the others stay behind it, for failover)
  :model MODEL      the model that backend is asked for
  :system TEXT      instructions added to the agent's prompt
  :temperature N    sampling temperature
  :max-tokens N     the longest answer, in tokens
  :tool-rounds N    rounds of tool calls; 0 offers no tools
  :skill NAME       a skill the turn uses from its start
For example:
  ((\"terse\" :system \"Answer in one paragraph.\" :temperature 0)
   (\"draft\" :backend \"claude\" :model \"claude-sonnet-4-5\" :tool-rounds 0))"
  :type '(alist :key-type (string :tag "Name")
                :value-type (plist :tag "Settings"
                                   :options ((:backend string) (:model string)
                                             (:system string) (:temperature number)
                                             (:max-tokens integer) (:tool-rounds integer)
                                             (:skill string))))
  :group 'org-agent-backends)

(defvar-local org-agent-preset nil
  "The preset of this buffer's turns: a name in `org-agent-presets', or nil.
Set it with `org-agent-preset-choose'.")
(put 'org-agent-preset 'safe-local-variable #'stringp)

(defvar-local org-agent-buffer-backend nil
  "The backend this buffer's turns try first, or nil.
A name in `org-agent-backends'.")
(put 'org-agent-buffer-backend 'safe-local-variable #'stringp)

(defvar-local org-agent-buffer-model nil
  "The model this buffer's turns ask the first backend for, or nil.")
(put 'org-agent-buffer-model 'safe-local-variable #'stringp)

(defvar org-agent-presets-message-preset nil
  "The preset the message being sent names with \"@NAME\", or nil.
Bound around a send by the command that read the message.")

(defconst org-agent-presets--keys
  '(:backend :model :system :temperature :max-tokens :tool-rounds :skill)
  "The settings a preset may give.")

(defun org-agent-presets-names ()
  "The names of the presets the user defined."
  (mapcar #'car org-agent-presets))

(defun org-agent-presets-get (name)
  "The settings of the preset NAME, a plist; an error if there is none.
Unknown keys are an error too, so that a typo does not pass unnoticed."
  (let ((entry (assoc name org-agent-presets)))
    (unless entry
      (user-error "No preset is named %S in `org-agent-presets' (there are: %s)"
                  name (if org-agent-presets
                           (string-join (org-agent-presets-names) ", ")
                         "none")))
    (let ((plist (cdr entry)))
      (unless (proper-list-p plist)
        (user-error "The preset %S is not a plist" name))
      (cl-loop for (key _value) on plist by #'cddr
               unless (memq key org-agent-presets--keys)
               do (user-error "The preset %S has %S; a preset may have %s" name key
                              (mapconcat #'symbol-name org-agent-presets--keys " ")))
      plist)))

(defun org-agent-presets--property ()
  "The ORG_AGENT_PRESET property at point in an Org buffer, inherited, or nil."
  (and (derived-mode-p 'org-mode)
       (let ((value (ignore-errors (org-entry-get nil "ORG_AGENT_PRESET" t))))
         (and value (not (string-empty-p (string-trim value))) (string-trim value)))))

(defun org-agent-presets-current ()
  "The name of the preset of the next turn from this buffer, or nil.
The message's \"@NAME\", else the Org property ORG_AGENT_PRESET at
point, else `org-agent-preset'."
  (or org-agent-presets-message-preset
      (org-agent-presets--property)
      org-agent-preset))

(defun org-agent-presets-current-settings ()
  "The settings of the current preset, a plist (nil without one)."
  (let ((name (org-agent-presets-current)))
    (and name (org-agent-presets-get name))))

(defun org-agent-presets-split-message (text)
  "Split a message TEXT naming a preset as \"@NAME\" into (NAME . REST).
NAME must be one of `org-agent-presets'; the first such word counts
and is taken out of TEXT.  A TEXT that names none is (nil . TEXT)."
  (let ((start 0) found)
    (while (and (not found)
                (string-match "\\(?:\\`\\|[ \t\n]\\)\\(@\\([[:alnum:]_.-]+\\)\\)\\(?:[ \t\n]\\|\\'\\)"
                              text start))
      (let ((name (match-string 2 text)))
        (if (assoc name org-agent-presets)
            (setq found (cons name
                              (string-trim
                               (concat (substring text 0 (match-beginning 1))
                                       (substring text (match-end 1))))))
          (setq start (match-end 1)))))
    (or found (cons nil text))))

(defun org-agent-presets-backend ()
  "Return the backend to try first, and how: (NAME MODEL MAX-TOKENS).
Each is nil when nothing chooses it: the buffer's own choice
\(`org-agent-buffer-backend', `org-agent-buffer-model') beats the
preset's."
  (let ((preset (org-agent-presets-current-settings)))
    (list (or org-agent-buffer-backend (plist-get preset :backend))
          (or org-agent-buffer-model (plist-get preset :model))
          (plist-get preset :max-tokens))))

(defun org-agent-presets-options ()
  "The current preset's settings as turn options for the module.
They come first in a turn's options, so they win over the defaults."
  (let ((preset (org-agent-presets-current-settings)))
    (append
     (when-let ((system (plist-get preset :system))) (list :system-prompt system))
     (when-let ((temperature (plist-get preset :temperature))) (list :temperature temperature))
     (when-let ((rounds (plist-get preset :tool-rounds))) (list :tool-rounds rounds))
     (when-let ((skill (plist-get preset :skill))) (list :skill skill)))))

(defun org-agent-presets-describe ()
  "Return a line naming the preset, backend and model of the next turn here."
  (pcase-let ((`(,backend ,model ,_) (org-agent-presets-backend))
              (name (org-agent-presets-current)))
    (format "preset %s · backend %s · model %s"
            (cond ((null name) "none")
                  ((equal name (org-agent-presets--property))
                   (format "%s (Org property)" name))
                  (t name))
            (or backend "the cascade's first")
            (or model "the backend's own"))))

;;;###autoload
(defun org-agent-preset-choose (name)
  "Make NAME the preset for every turn from this buffer (empty: none).
The buffer's preset gives way to an ORG_AGENT_PRESET property at
point and to \"@NAME\" in a message."
  (interactive
   (list (if (null org-agent-presets)
             (user-error "No presets yet: define them in `org-agent-presets'")
           (completing-read "Preset for this buffer (empty: none): "
                            (org-agent-presets-names) nil t))))
  (if (or (null name) (string-empty-p name))
      (progn (setq org-agent-preset nil)
             (message "org-agent: no preset in %s" (buffer-name)))
    (org-agent-presets-get name)
    (setq org-agent-preset name)
    (message "org-agent: preset %s in %s" name (buffer-name))))

(provide 'org-agent-presets)
;;; org-agent-presets.el ends here
