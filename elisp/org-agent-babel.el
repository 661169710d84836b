;;; org-agent-babel.el --- Org Babel blocks whose result is the agent's answer -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A source block in the language `org-agent' is a question; C-c C-c
;; on it asks the agent, and the answer becomes the block's result:
;;
;;   #+begin_src org-agent :preset terse :context subtree
;;   What is still open in this project?
;;   #+end_src
;;
;; Header arguments: :backend NAME (tried first), :preset NAME (see
;; `org-agent-presets'), :context none, subtree or buffer (that text
;; goes with the question, private parts cut).  Results are raw Org in
;; a drawer by default.  Emacs never waits: the block's result says the
;; answer is coming, and the answer replaces it when it has come.  The
;; agent may look things up; an edit it asks for is denied.

;;; Code:

(require 'org-agent-base)
(require 'ob)
(require 'subr-x)
(require 'org-agent-backends)
(require 'org-agent-chat)
(require 'org-agent-presets)
(org-agent--declare-module-functions)

(defvar org-babel-default-header-args:org-agent
  '((:results . "raw drawer") (:exports . "both") (:context . "none"))
  "Default header arguments of `org-agent' source blocks.")

(defvar org-agent-babel--waiting (make-hash-table)
  "Request id → (MARKER TOKEN TEXT-SO-FAR): the block waiting for its answer.")

(defun org-agent-babel--placeholder (token)
  "The result shown while the answer with TOKEN is coming."
  (format "org-agent: the answer is coming (%s)" token))

(defun org-agent-babel--context (kind)
  "The text KIND (none, subtree or buffer) names around point, private parts cut."
  (let ((text (pcase kind
                ((or 'nil "none" 'none) nil)
                ((or "subtree" 'subtree)
                 (save-excursion
                   (if (org-before-first-heading-p)
                       (user-error "The block is under no heading: :context subtree needs one")
                     (org-back-to-heading t)
                     (buffer-substring-no-properties
                      (point) (progn (org-end-of-subtree t t) (point))))))
                ((or "buffer" 'buffer)
                 (save-restriction (widen) (buffer-substring-no-properties
                                            (point-min) (point-max))))
                (other (user-error ":context must be none, subtree or buffer, not %s" other)))))
    (and text
         (org-agent--redact-private-now
          text (if buffer-file-name (expand-file-name buffer-file-name) (buffer-name))))))

(defun org-babel-execute:org-agent (body params)
  "Ask the agent BODY, with the header arguments PARAMS; the answer comes later.
Return a line saying the answer is coming; the answer replaces it."
  (org-agent--require-started)
  (when (string-empty-p (string-trim body))
    (user-error "The block asks nothing"))
  (let* ((backend (cdr (assq :backend params)))
         (preset (cdr (assq :preset params)))
         (context (org-agent-babel--context (cdr (assq :context params))))
         (token (format "%06x" (random #xffffff)))
         (marker (copy-marker (or (org-babel-where-is-src-block-head) (point))))
         (prompt (concat body
                         (and context
                              (format "\n\nThe notes around my question:\n-----BEGIN NOTES-----\n%s%s-----END NOTES-----"
                                      context (if (string-suffix-p "\n" context) "" "\n")))
                         "\n\n(Your answer becomes the result of an Org source block: \
write Org markup, not Markdown, and no heading lines.)"))
         (org-agent-buffer-backend (or (and backend (format "%s" backend))
                                       org-agent-buffer-backend))
         (org-agent-presets-message-preset (and preset (format "%s" preset))))
    (when org-agent-presets-message-preset
      (org-agent-presets-get org-agent-presets-message-preset))
    (let ((backends (or (org-agent-backends-cascade)
                        (user-error "No backend is ready: set `org-agent-backends'"))))
      (let ((request (org-agent-chat-stimulus prompt (format "babel-%s" token) backends
                                              (append (list :interactive nil)
                                                      (org-agent-chat-common-options)))))
        (puthash request (list marker token "") org-agent-babel--waiting)))
    (org-agent-babel--placeholder token)))

(defun org-agent-babel--inline (text)
  "TEXT made safe to stand in a results drawer or as raw results.
A heading line would end the drawer (and the block's subtree would
change shape), as would a line saying :END:; headings become bold
lines, that line becomes verbatim text."
  (let ((case-fold-search t))
    (replace-regexp-in-string
     "^[ \t]*:END:[ \t]*$" "=:END:="
     (replace-regexp-in-string
      "^\\*+[ \t]+\\(.*?\\)[ \t]*$"
      (lambda (line)
        (let ((title (match-string 1 line)))
          (if (string-empty-p title) "" (concat "*" title "*"))))
      text t t)
     t t)))

(defun org-agent-babel--settle (request text)
  "Put TEXT as the result of the block REQUEST was for, if it still waits for it."
  (pcase-let ((`(,marker ,token ,_) (gethash request org-agent-babel--waiting)))
    (remhash request org-agent-babel--waiting)
    (when-let ((buffer (marker-buffer marker)))
      (with-current-buffer buffer
        (save-excursion
          (goto-char marker)
          (set-marker marker nil)
          (let* ((info (org-babel-get-src-block-info))
                 (result (org-babel-where-is-src-block-result nil info)))
            ;; Run again meanwhile, or its result removed: this answer is no longer wanted.
            (when (and info result
                       (save-excursion
                         (goto-char result)
                         (search-forward (org-agent-babel--placeholder token)
                                         (save-excursion (org-babel-result-end)) t)))
              (let* ((result-params (cdr (assq :result-params (nth 2 info))))
                     (raw (and (or (member "raw" result-params) (member "drawer" result-params))
                               (not (member "org" result-params)))))
                (org-babel-insert-result
                 (if raw (org-agent-babel--inline text) text)
                 result-params info nil "org-agent")))))))))

(defun org-agent-babel--handle (event)
  "Act on the chat EVENT if it belongs to a block's request."
  (let ((request (plist-get event :request)))
    (when-let ((waiting (gethash request org-agent-babel--waiting)))
      (pcase (plist-get event :kind)
        ('text (setf (nth 2 waiting) (concat (nth 2 waiting) (plist-get event :text))))
        ('ask
         (message "org-agent: a block's answer makes no edits; denied %s"
                  (plist-get event :name))
         (org-agent--answer (plist-get event :reply) 'deny))
        ('done (org-agent-babel--settle
                request (string-trim (or (plist-get event :answer) (nth 2 waiting)))))
        ('error (org-agent-babel--settle
                 request (format "org-agent error: %s" (plist-get event :message))))
        ('interrupted (org-agent-babel--settle request "org-agent: interrupted"))))))

(add-hook 'org-agent-chat-functions #'org-agent-babel--handle)

(provide 'org-agent-babel)
;;; org-agent-babel.el ends here
