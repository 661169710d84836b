;;; org-agent-sentinel.el --- Move a credential out of a note into auth-source -*- lexical-binding: t; -*-

;;; Commentary:

;; The secret-sentinel skill finds credentials pasted into notes (its
;; scan, in Rust, names the rule and the field, never the secret).  The
;; model never sees a secret, so moving one happens here, in Emacs:
;; `org-agent-sentinel-move' finds the credential in the note's text
;; with the same detector (`org-agent--secret-spans'), shows the user
;; what will move, writes it to the first file of `auth-sources' through
;; auth-source's own API (netrc format, or GPG-encrypted when the file
;; is a .gpg), reads it back from there, and only then replaces it in the
;; note with a pointer, as one undo step.  What goes back to the model
;; names the rule, the host and the login: never the secret.

;;; Code:

(require 'auth-source)
(require 'org)
(require 'seq)
(require 'subr-x)
(require 'org-agent-actuator)
(require 'org-agent-base)
(org-agent--declare-module-functions)

(declare-function org-agent-node "org-agent-store" (id))

(defface org-agent-sentinel-secret
  '((t :inherit highlight :weight bold))
  "How the credential about to move is shown."
  :group 'org-agent)

(defun org-agent-sentinel-pointer (host login)
  "Return the text that takes the place of a credential moved as HOST and LOGIN."
  (format "(moved to auth-source: machine %s login %s)" host login))

(defun org-agent-sentinel--auth-file ()
  "The first file of `auth-sources', expanded; nil when it names none.
Entries that are not files (the Secret Service, a keychain, pass) are
passed over: the credential goes where a netrc line can be written."
  (seq-some (lambda (source)
              (let ((file (cond ((stringp source) source)
                                ((and (consp source) (stringp (plist-get source :source)))
                                 (plist-get source :source)))))
                (and file (not (string-suffix-p ".plist" file)) (expand-file-name file))))
            auth-sources))

(defun org-agent-sentinel--own-region (node)
  "The region (BEG . END) of NODE's own text in the current buffer.
Its headline, planning, drawers and body, not its children's; for the
file node, the text before the first headline.  Point is at BEG."
  (widen)
  (if (eq (plist-get node :kind) 'file)
      (progn (goto-char (point-min))
             (cons (point-min)
                   (save-excursion (if (re-search-forward org-outline-regexp-bol nil t)
                                       (match-beginning 0)
                                     (point-max)))))
    (org-agent-actuator-goto node)
    (cons (point) (save-excursion (outline-next-heading) (point)))))

(defun org-agent-sentinel--confirm (beg end rule host login file)
  "Show the credential between BEG and END and ask to move it.
RULE found it; it would go to FILE as HOST and LOGIN.  Return non-nil
when the user says yes."
  (let ((overlay (make-overlay beg end)))
    (unwind-protect
        (progn
          (overlay-put overlay 'face 'org-agent-sentinel-secret)
          (when-let ((window (display-buffer (current-buffer))))
            (set-window-point window beg))
          (y-or-n-p (format "Move this %s (%d characters, highlighted) to %s as machine %s login %s? "
                            rule (- end beg) (abbreviate-file-name file) host login)))
      (delete-overlay overlay))))

(defun org-agent-sentinel--spec (host login port)
  "An auth-source search spec for HOST, LOGIN and PORT (left out when nil)."
  (append (list :host host :user login :max 1)
          (and port (list :port port))))

(defun org-agent-sentinel--secret-of (entry)
  "The secret of auth-source ENTRY, as a string, or nil."
  (let ((secret (plist-get entry :secret)))
    (if (functionp secret) (funcall secret) secret)))

(defun org-agent-sentinel--store (file host login port secret)
  "Write SECRET to FILE as HOST, LOGIN (and PORT), then read it back.
An entry for HOST and LOGIN already there with the same secret is
enough; one with another secret is refused, so nothing is overwritten.
Signal when the secret is not in FILE afterwards."
  (let ((auth-sources (list file))
        ;; The user has just said yes to this very move.
        (auth-source-save-behavior t))
    (auth-source-forget-all-cached)
    (let ((existing (car (apply #'auth-source-search
                                (org-agent-sentinel--spec host login port)))))
      (cond
       ((and existing (equal (org-agent-sentinel--secret-of existing) secret)))
       (existing
        (user-error "%s already has another secret for machine %s login %s; nothing moved"
                    (abbreviate-file-name file) host login))
       (t
        (let* ((created (car (apply #'auth-source-search :secret secret :create t
                                    (org-agent-sentinel--spec host login port))))
               (save (plist-get created :save-function)))
          (unless (functionp save)
            (user-error "Cannot write to %s through auth-source; nothing moved" file))
          (funcall save)))))
    (auth-source-forget-all-cached)
    (unless (equal secret (org-agent-sentinel--secret-of
                           (car (apply #'auth-source-search
                                       (org-agent-sentinel--spec host login port)))))
      (user-error "The secret is not in %s after writing it; the note is unchanged" file))))

;;;###autoload
(defun org-agent-sentinel-move (id host login &optional port)
  "Move the first credential of note ID to auth-source as HOST and LOGIN.
PORT, when non-nil, goes into the entry too.  The credential is found
with the secret detector, shown, and moved only when the user agrees:
written to the first file of `auth-sources', read back, then replaced
in the note by `org-agent-sentinel-pointer' (one undo step; the file is
saved when it had no other unsaved change).  Return what happened, in
words that never include the secret."
  (dolist (arg (list (cons "host" host) (cons "login" login)))
    (when (or (not (stringp (cdr arg))) (string-blank-p (cdr arg))
              (string-match-p "[[:space:]\"]" (cdr arg)))
      (user-error "The %s must be one word, without spaces or quotes" (car arg))))
  (let* ((file (or (org-agent-sentinel--auth-file)
                   (user-error "`auth-sources' names no file to move the credential to")))
         (node (or (org-agent-node id) (user-error "No note with id %s" id)))
         (buffer (org-agent-actuator-node-buffer node))
         (was-modified (buffer-modified-p buffer)))
    (with-current-buffer buffer
      (save-excursion
        (save-restriction
          (pcase-let* ((`(,beg . ,end) (org-agent-sentinel--own-region node))
                       (spans (org-agent--secret-spans
                               (buffer-substring-no-properties beg end)))
                       (`(,from ,to ,rule) (or (car spans)
                                               (user-error "No credential in note %s" id)))
                       (start (copy-marker (+ beg from)))
                       (stop (copy-marker (+ beg to) t)))
            (unless (org-agent-sentinel--confirm start stop rule host login file)
              (user-error "Not moved: the user said no"))
            (org-agent-sentinel--store file host login port
                                       (buffer-substring-no-properties start stop))
            (org-agent-actuator-one-step
              (goto-char start)
              (delete-region start stop)
              (insert (org-agent-sentinel-pointer host login)))
            ;; Out of the note is out of its file: save unless the user has other
            ;; unsaved changes there, which are not ours to save.
            (when (and (not was-modified) buffer-file-name (buffer-modified-p))
              (save-buffer))
            (format "Moved a %s from note %s to %s as machine %s login %s%s; the note now says %s%s."
                    rule id (abbreviate-file-name file) host login
                    (if port (format " port %s" port) "")
                    (org-agent-sentinel-pointer host login)
                    (concat
                     (if (cdr spans)
                         (format "; %d more credential%s in the note (call again for each)"
                                 (length (cdr spans)) (if (cddr spans) "s" ""))
                       "")
                     (if was-modified
                         "; the buffer has other unsaved changes, so it is not saved yet: the secret stays on disk until it is"
                       "")))))))))

(provide 'org-agent-sentinel)
;;; org-agent-sentinel.el ends here
