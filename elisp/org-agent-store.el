;;; org-agent-store.el --- The Org object store, seen from Elisp -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The public Elisp API of org-agent's object store: ingesting files
;; and buffers, queries, nodes and their history, snapshots.  Here too
;; are the options that say where the notes and the store are and what
;; of them the LLM may see, and `org-agent--start', which loads the
;; module, opens the store and the wake-up channel.  The module's
;; events reach the store through org-agent-dispatch.el.

;;; Code:

(require 'org-agent-base)
(require 'org)
(require 'subr-x)
(require 'org-agent-build)
(require 'org-agent-dispatch)
(org-agent--declare-module-functions)

;;;; Options

(defcustom org-agent-state-directory
  (locate-user-emacs-file "org-agent/")
  "Directory where org-agent keeps its state (the persisted store)."
  :type 'directory
  :group 'org-agent-store)

(defcustom org-agent-directories nil
  "Directories whose Org files org-agent ingests.
When nil, use `org-directory'."
  :type '(repeat directory)
  :group 'org-agent-store)

(defun org-agent--set-watch-interval (symbol value)
  "Set SYMBOL to VALUE; restart a running watch with it."
  (set-default symbol value)
  (when (fboundp 'org-agent--watch-restart)
    (org-agent--watch-restart)))

(defcustom org-agent-watch-interval 30
  "Seconds between two comparisons of the store with the files on disk.
While `org-agent-mode' is on, a worker compares them this often and
takes in what changed outside Emacs (a `git pull', a sync tool,
another editor): files changed are ingested again, files deleted
leave the store, new Org files under `org-agent-directories' are
added.  A comparison costs one `stat' per file when nothing
changed.  nil: only when the store is opened."
  :type '(choice (const :tag "Only when the store is opened" nil)
                 (number :tag "Seconds"))
  :set #'org-agent--set-watch-interval
  :group 'org-agent-store)

(defcustom org-agent-snapshot-count 20
  "How many store snapshots to keep for rollback."
  :type 'natnum
  :group 'org-agent-store)

(defun org-agent--set-privacy-option (symbol value)
  "Set SYMBOL to VALUE and hand the privacy rules to the module if it is loaded."
  (set-default symbol value)
  (when (fboundp 'org-agent--send-privacy)
    (org-agent--send-privacy)))

(defcustom org-agent-private-tags '("@personal" "private")
  "Tags that keep a subtree out of the LLM's view.
A headline with one of these tags (its own, an ancestor's, or from
#+FILETAGS), or with a property PRIVATE of t, is private with
all its children: it never enters a prompt, a tool result or an
embedding request, and the agent cannot edit it.  Tag inheritance
settings do not matter here."
  :type '(repeat string)
  :set #'org-agent--set-privacy-option
  :group 'org-agent-security)

(defcustom org-agent-private-files nil
  "Org files the LLM never sees, as glob patterns.
A pattern without a slash matches the file name (\"diary.org\",
\"*.private.org\"); one with a slash matches the absolute file name
\(\"~/notes/journal/**\").  `*' matches within a directory, `**' across
directories, `?' one character."
  :type '(repeat string)
  :set #'org-agent--set-privacy-option
  :group 'org-agent-security)

(defcustom org-agent-untrusted-tags '("untrusted" "web")
  "Tags that mark text the user did not write, which may give the agent orders.
A headline with one of these tags (its own, an ancestor's, or from
#+FILETAGS) is untrusted with all its children, as is one (or one
under one) whose property SOURCE, SOURCE_URL or ROAM_REFS is a web
address (the properties web captures write; URL does not count).
The agent still reads such text, marked as data, but once a
conversation has read it, every edit it proposes is asked about,
even a kind approved for the conversation, and the question says
what was read.  Files read from outside the notes, command output
and the results of Elisp tools count as untrusted too."
  :type '(repeat string)
  :set #'org-agent--set-privacy-option
  :group 'org-agent-security)

(defcustom org-agent-secret-properties
  '("PASSWORD" "PASS" "PASSWD" "SECRET" "TOKEN" "API_KEY" "APIKEY"
    "PRIVATE_KEY" "CREDENTIALS")
  "Properties whose values the LLM never sees.
Wherever the agent would show a property with one of these names
\(any case) -- a node it reads, the focus in its context, a buffer
sent to it -- the value is replaced by \"[withheld]\".  The secret
gate also withholds credentials it recognises in any text sent to
an LLM or embedding server; this list catches what no pattern
would, such as a password made of plain words."
  :type '(repeat string)
  :set #'org-agent--set-privacy-option
  :group 'org-agent-security)

(defcustom org-agent-protected-files nil
  "Files and directories the agent may never read or write.
Always protected besides these, whatever the directories: ~/.ssh,
~/.gnupg, ~/.authinfo*, ~/.netrc, ~/.aws, ~/.config/gh, ~/.kube,
~/.docker/config.json, the Emacs init files (`user-init-file',
`early-init-file', `custom-file' too), any .git directory, and
`org-agent-state-directory'.  Each is judged by where it really
leads: a symbolic link to a protected file is protected."
  :type '(repeat file)
  :set #'org-agent--set-privacy-option
  :group 'org-agent-security)

;;;; State

(defvar org-agent--started nil
  "Non-nil once the module is loaded and the store is open.")

(defcustom org-agent-store-wait-interval 5
  "Seconds between tries to open a store another Emacs holds.
Two sessions of one user on one `org-agent-state-directory' (a daemon
and an `emacs -nw', say) never write it at once: the second waits,
says so in `org-agent-status', and opens the store as soon as the
first lets go of it (when it exits, or is killed)."
  :type 'number
  :group 'org-agent-store)

(defvar org-agent--store-waiting nil
  "Why org-agent waits to open its store (another Emacs holds it), or nil.")

(defvar org-agent--store-wait-timer nil
  "The timer that tries again to open a store another Emacs holds.")

(defvar org-agent-start-hook nil
  "Functions run once the module is loaded and the store is open.")

(defvar org-agent--progress-reporters (make-hash-table)
  "Request id → progress reporter of a directory ingest.")

(defvar org-agent--directory-ingest nil
  "The directory ingest in flight, as (REQUEST . DIRECTORIES), or nil.
A second request for the same directories joins it rather than
running beside it: two ingests of one file race, and the loser
reported the file done before the winner had stored it.")

;;;; Directory ingests

(defun org-agent--directory-event (event)
  "Show the progress of a directory ingest from EVENT; forget it when it ends."
  (let ((request (plist-get event :request)))
    (when (and (memq (plist-get event :type) '(directory-done failed))
               (eql request (car org-agent--directory-ingest)))
      (setq org-agent--directory-ingest nil))
    (pcase (plist-get event :type)
      ('progress
       (let ((reporter (or (gethash request org-agent--progress-reporters)
                           (puthash request
                                    (make-progress-reporter "org-agent: ingesting Org files..."
                                                            0 (plist-get event :total))
                                    org-agent--progress-reporters))))
         (progress-reporter-update reporter (plist-get event :done))))
      ('directory-done
       (remhash request org-agent--progress-reporters)
       (let ((errors (plist-get event :errors)))
         (message "org-agent: %d Org files (%d ingested, %d unchanged, %d removed), %d nodes%s"
                  (plist-get event :files) (plist-get event :ingested)
                  (plist-get event :unchanged) (plist-get event :removed)
                  (plist-get event :nodes)
                  (if errors (format "; %d errors, first: %s" (length errors) (car errors)) "")))))))

(add-hook 'org-agent-directory-ingest-functions #'org-agent--directory-event)

;;;; Starting

(defun org-agent--todo-lists ()
  "Return (TODO DONE): the default keywords from `org-todo-keywords'."
  (let (todo done)
    (dolist (seq (default-value 'org-todo-keywords))
      (let* ((words (mapcar (lambda (w) (replace-regexp-in-string "(.*?)" "" w))
                            (cdr seq)))
             (bar (member "|" words))
             (dones (or (cdr bar) (last words)))
             (todos (if bar (butlast words (length bar)) (butlast words))))
        (setq todo (append todo todos)
              done (append done dones))))
    (list (delete-dups todo) (delete-dups done))))

(defun org-agent--send-configuration ()
  "Pass the Org settings that shape ingest to the module."
  (pcase-let ((`(,todo ,done) (org-agent--todo-lists)))
    (org-agent--configure todo done org-version
                          (let ((ex (default-value 'org-tags-exclude-from-inheritance)))
                            (if (listp ex) ex nil))
                          org-agent-snapshot-count
                          ;; Org reads deep headlines as inline tasks once it is loaded.
                          (and (featurep 'org-inlinetask)
                               (boundp 'org-inlinetask-min-level)
                               (natnump org-inlinetask-min-level)
                               org-inlinetask-min-level)))
  (org-agent--set-redisplay-interval org-agent-chat-redisplay-interval)
  (org-agent--send-privacy))

(defun org-agent--send-privacy ()
  "Hand the privacy, secrecy and trust options to the module.
They are `org-agent-private-tags', `org-agent-private-files',
`org-agent-secret-properties' and `org-agent-untrusted-tags'; the
directories and protected files go with them (`org-agent--send-roots')."
  (when (fboundp 'org-agent--set-privacy)
    (org-agent--set-privacy
     org-agent-private-tags
     (mapcar (lambda (pattern)
               (if (string-prefix-p "~" pattern) (expand-file-name pattern) pattern))
             org-agent-private-files)))
  (when (fboundp 'org-agent--set-untrusted-tags)
    (org-agent--set-untrusted-tags org-agent-untrusted-tags))
  (when (fboundp 'org-agent--set-secret-properties)
    (org-agent--set-secret-properties org-agent-secret-properties))
  (org-agent--send-roots))

(defun org-agent--send-roots ()
  "Hand the module where the agent's files may be, and what is protected.
The directories are `org-agent-directories' (or `org-directory'):
edits and the file tools stay inside them, judged by real paths."
  (when (fboundp 'org-agent--set-roots)
    (org-agent--set-roots
     (org-agent--directories)
     (expand-file-name "~")
     (and org-agent-state-directory (expand-file-name org-agent-state-directory))
     (mapcar #'expand-file-name
             (delq nil (append (list (bound-and-true-p user-init-file)
                                     (bound-and-true-p early-init-file)
                                     (bound-and-true-p custom-file))
                               org-agent-protected-files))))))

;; Once org-inlinetask is loaded, Org reads deep headlines as inline tasks: tell the store,
;; whose texts are then parsed again as their digests change.
(with-eval-after-load 'org-inlinetask
  (when (bound-and-true-p org-agent--started)
    (org-agent--send-configuration)))

(defun org-agent--directories ()
  "Return the directories to ingest, expanded."
  (mapcar #'expand-file-name
          (or org-agent-directories
              (and (bound-and-true-p org-directory) (list org-directory)))))

(defun org-agent--start ()
  "Load the module, open the store and the wake-up channel, once.
Return non-nil when org-agent is running."
  (or org-agent--started
      (when (org-agent-ensure-module)
        (org-agent--send-configuration)
        (org-agent--open-channel)
        (when-let ((report (org-agent--open-or-wait
                            (expand-file-name org-agent-state-directory))))
          (add-hook 'kill-emacs-hook #'org-agent--shutdown)
          (setq org-agent--started t)
          (run-hooks 'org-agent-start-hook)
          (if (not (plist-get report :rebuilt))
              ;; Files may have changed while the store was closed, or after the log
              ;; was last written (a torn tail): one pass on a worker catches up.  One
              ;; still running was for the store this open replaced.
              (progn (setq org-agent--reconcile-request nil)
                     (org-agent--reconcile))
            (org-agent--warn-rebuilt report)
            (when (org-agent--directories)
              (org-agent-ingest-directory)))
          t))))

(defun org-agent--open-or-wait (dir)
  "Open the store in DIR and return its report.
Return nil while another Emacs holds it: then a timer tries again
every `org-agent-store-wait-interval' seconds."
  (condition-case err
      (prog1 (org-agent--store-open dir)
        (when org-agent--store-waiting
          (message "org-agent: the store in %s is free again and now open" dir))
        (setq org-agent--store-waiting nil)
        (when org-agent--store-wait-timer
          (cancel-timer org-agent--store-wait-timer)
          (setq org-agent--store-wait-timer nil)))
    (org-agent-store-locked
     (unless org-agent--store-waiting
       (message "org-agent: %s" (cadr err)))
     (setq org-agent--store-waiting (cadr err))
     (unless org-agent--store-wait-timer
       (setq org-agent--store-wait-timer
             (run-with-timer org-agent-store-wait-interval org-agent-store-wait-interval
                             #'org-agent--start)))
     nil)))

(defun org-agent--warn-rebuilt (report)
  "Tell the user, once, that the store in REPORT could not be used.
REPORT is the plist of `org-agent--store-open'."
  (let ((aside (plist-get report :set-aside))
        (log (plist-get report :log)))
    (display-warning
     'org-agent
     (concat (format "org-agent could not use its store: %s\n"
                     (plist-get report :rebuilt))
             (if aside
                 (format "It was set aside as %s.\n" aside)
               "")
             (if log
                 (format "The store is being rebuilt from your Org files in %s." log)
               "The store is being rebuilt from your Org files, in memory only: \
no store file could be written, so it will be rebuilt again at the next start.")))))

(defun org-agent--shutdown ()
  "Write every pending change to disk before Emacs exits."
  (when org-agent--started
    (ignore-errors (org-agent--store-flush))))

(defun org-agent--require-started ()
  "Start org-agent or signal that it cannot run yet."
  (unless (org-agent--start)
    (if org-agent--store-waiting
        (user-error "%s" org-agent--store-waiting)
      (user-error "The org-agent module is being built; try again when it is loaded"))))

;;;; Ingest

(defun org-agent-ingest-file (file &optional force)
  "Ingest FILE into the store now and return its node count.
An unchanged file (same modification time and size) is not read
again unless FORCE.  A file that no longer exists is no error: it
leaves the store, as in a directory ingest, a message says so, and
the value is 0 (a file that exists has at least its own node).  A
file that exists but cannot be read signals `org-agent-store-error'."
  (org-agent--require-started)
  (let* ((file (expand-file-name file))
         (result (org-agent--ingest-file file (and force t))))
    (pcase result
      (`(:gone ,nodes)
       (if (> nodes 0)
           (message "org-agent: %s no longer exists; its %d nodes left the store"
                    file nodes)
         (message "org-agent: %s does not exist (it was not in the store)" file))
       0)
      (_ result))))

(defun org-agent--buffer-keywords ()
  "Return (TODO DONE), the keywords Org computed for the current buffer."
  (list (seq-difference org-todo-keywords-1 org-done-keywords)
        org-done-keywords))

(defun org-agent--buffer-text ()
  "Return the whole text of the current buffer, without properties."
  (save-restriction
    (widen)
    (buffer-substring-no-properties (point-min) (point-max))))

(defun org-agent-ingest-buffer (&optional buffer async callback)
  "Ingest the Org BUFFER (default: the current one) into the store.
Without ASYNC, return the node count.  With ASYNC, only copy the
text on this thread and return a request id at once; a worker parses
it, and CALLBACK, if given, is called with the result event plist.
A buffer without a file is stored under its name."
  (org-agent--require-started)
  (with-current-buffer (or buffer (current-buffer))
    (unless (derived-mode-p 'org-mode)
      (user-error "Buffer %s is not in Org mode" (buffer-name)))
    (let ((file (if buffer-file-name (expand-file-name buffer-file-name) (buffer-name)))
          (text (org-agent--buffer-text)))
      (pcase-let ((`(,todo ,done) (org-agent--buffer-keywords)))
        ;; The module takes any text, raw bytes (undecodable input) included: each
        ;; becomes U+FFFD, one character as in the buffer, so positions agree.
        (if async
            (let ((request (org-agent--ingest-text-async file text todo done)))
              (when callback (puthash request callback org-agent--callbacks))
              request)
          (org-agent--ingest-text file text todo done))))))

(defun org-agent--saved-as-utf-8 ()
  "Return (SIGNATURE CRLF) when the saved file has the buffer's text as UTF-8.
Then the module reads the buffer's text back from the file exactly
\(`org-agent--ingest-saved-async'), and the save copies nothing on
this thread: SIGNATURE says a byte-order mark precedes it, CRLF that
each newline was written as CR LF.  Return nil when the file may not
be the buffer's text as UTF-8, and the text must be copied: a file
name handler wrote it (TRAMP's remote files, jka-compr's .gz, epa's
.gpg), a hook or `buffer-file-format' did, or another coding did (a
`coding:' cookie, Latin-1, old Mac CR line ends, a unibyte buffer)."
  (let* ((coding buffer-file-coding-system)
         (base (coding-system-base coding))
         (eol (coding-system-eol-type coding)))
    (and buffer-file-name
         enable-multibyte-characters
         (not buffer-file-format)
         ;; Either may write the file itself, anywhere and in any form.
         (not write-contents-functions)
         (not write-file-functions)
         (not (find-file-name-handler buffer-file-name 'write-region))
         ;; `undecided' stays the coding of a saved ASCII file, and encodes as UTF-8.
         (memq base '(utf-8 utf-8-with-signature undecided prefer-utf-8))
         (memq eol '(0 1))
         (list (eq base 'utf-8-with-signature) (eq eol 1)))))

(defun org-agent--after-save ()
  "Re-ingest the current Org buffer after it was saved, off the main thread.
Return the request id.  Where the file holds the buffer's text
\(`org-agent--saved-as-utf-8'), a worker reads it; else the text is
copied as `org-agent-ingest-buffer' does."
  (when (and org-agent--started (derived-mode-p 'org-mode) buffer-file-name)
    (condition-case err
        (let ((written (org-agent--saved-as-utf-8)))
          (if (not written)
              (org-agent-ingest-buffer nil t)
            (pcase-let ((`(,todo ,done) (org-agent--buffer-keywords)))
              (org-agent--ingest-saved-async (expand-file-name buffer-file-name)
                                             (car written) (cadr written)
                                             todo done))))
      (error (message "org-agent: cannot ingest %s: %s"
                      (buffer-name) (error-message-string err))))))

;;;###autoload
(defun org-agent-ingest-directory (&optional callback)
  "Ingest every Org file under `org-agent-directories' off the main thread.
Unchanged files are skipped; files that are gone leave the store.
Progress shows in the echo area.  CALLBACK, if given, is called with
the final event plist.  While an ingest of the same directories
runs, join it instead of starting another.  Return the request id."
  (interactive)
  (org-agent--require-started)
  (let ((dirs (org-agent--directories)))
    (unless dirs
      (user-error "Set `org-agent-directories' or `org-directory' first"))
    (let ((request
           (if (equal (cdr org-agent--directory-ingest) dirs)
               (car org-agent--directory-ingest)
             (let ((request (org-agent--ingest-directories-async dirs)))
               (setq org-agent--directory-ingest (cons request dirs))
               request))))
      (when callback (org-agent--add-callback request callback))
      request)))

;;;; The store and the disk

(defvar org-agent--reconcile-request nil
  "The request id of the comparison of the store with the disk in flight, or nil.")

(defvar org-agent--watch-timer nil
  "The timer of `org-agent-watch-interval', while `org-agent-mode' is on.")

(defun org-agent--reconcile (&optional callback)
  "Compare the store with the files on disk on a worker; return the request id.
Files changed on disk are ingested again, deleted ones leave the
store, new Org files under `org-agent-directories' are added; each
change reaches `org-agent-ingest-functions'.  While a comparison
runs, join it.  CALLBACK, if given, is called with its final event,
of type `reconciled' (:files :confirmed :ingested :removed :errors)."
  (let ((request (or org-agent--reconcile-request
                     (setq org-agent--reconcile-request
                           (org-agent--reconcile-async (org-agent--directories))))))
    (org-agent--add-callback request #'org-agent--reconciled)
    (when callback (org-agent--add-callback request callback))
    request))

(defun org-agent--reconciled (event)
  "Forget the comparison EVENT ends; report its errors."
  (when (eql (plist-get event :request) org-agent--reconcile-request)
    (setq org-agent--reconcile-request nil))
  (when-let ((errors (plist-get event :errors)))
    (message "org-agent: comparing the store with the disk: %d errors, first: %s"
             (length errors) (car errors))))

;;;###autoload
(defun org-agent-reconcile (&optional callback)
  "Bring the store up to date with the Org files on disk, off the main thread.
Files changed outside Emacs are ingested again, deleted ones leave
the store, new Org files under `org-agent-directories' are added.
CALLBACK, if given, is called with the final event plist.  Return the
request id."
  (interactive)
  (org-agent--require-started)
  (org-agent--reconcile callback))

(defun org-agent--watch-tick ()
  "Compare the store with the disk unless a comparison is in flight."
  (when (and org-agent--started (not org-agent--reconcile-request))
    (condition-case err
        (org-agent--reconcile)
      (error (message "org-agent: cannot compare the store with the disk: %s"
                      (error-message-string err))))))

(defun org-agent--watch-stop ()
  "Stop comparing the store with the disk periodically."
  (when (timerp org-agent--watch-timer)
    (cancel-timer org-agent--watch-timer))
  (setq org-agent--watch-timer nil))

(defun org-agent--watch-start ()
  "Compare the store with the disk every `org-agent-watch-interval' seconds."
  (org-agent--watch-stop)
  (when (and (numberp org-agent-watch-interval) (> org-agent-watch-interval 0))
    (setq org-agent--watch-timer
          (run-with-timer org-agent-watch-interval org-agent-watch-interval
                          #'org-agent--watch-tick))))

(defun org-agent--watch-restart ()
  "Restart a running watch with the new `org-agent-watch-interval'."
  (when (timerp org-agent--watch-timer)
    (org-agent--watch-start)))

;;;; Queries

(defun org-agent-query (&rest query)
  "Return the nodes matching QUERY, a plist, as node plists.
Keys (all optional, all must match):
  :file F                 nodes of file F, in document order
  :type T                 `file' or `headline'
  :tag TAG                own or inherited tag, #+FILETAGS included
  :own-tag TAG            own tag only
  :todo KW                TODO keyword
  :todo-type T            `todo' or `done'
  :property KEY           has property KEY; or (KEY . VALUE) for KEY = VALUE
  :scheduled-before D     also :scheduled-after, :deadline-before and
                          :deadline-after: D is a date \"YYYY-MM-DD\",
                          compared strictly
  :closed-within N        CLOSED in the last N days
  :level N                headline level
  :projects t             active projects: tagged `project', not done
  :sparse t               add the ancestors of every match (a sparse tree)
  :limit N                at most N nodes
  :fields (K ...)         only these keys in each plist, e.g. (:id :title);
                          fewer keys make large results much cheaper
  :lazy t                 records instead of plists (see below)
Each node plist has :id :kind :title :todo :todo-type :priority
:tags :inherited-tags :properties :scheduled :deadline :closed
:level :file :begin :end :hash :parent.  A key whose value would be
nil is left out, which `plist-get' does not tell apart.  Strings that
many nodes share (file names, TODO keywords, tags, property names)
are one string per call: do not modify them in place.

With `:lazy t', each node is an `org-agent-node' record that holds
only its place in the result, and `org-agent-node-get' reads one field
of it on demand, as the node was when queried (re-ingesting a file
does not change it).  A large result made of records is cheap: almost
no garbage for Emacs to collect.  `org-agent-node-get' also reads
plists, so code can take either."
  (org-agent--require-started)
  (org-agent--query (org-agent--query-plist query)))

(defun org-agent-node-record-p (object)
  "Return non-nil if OBJECT is a node record of a `:lazy' `org-agent-query'."
  (eq (type-of object) 'org-agent-node))

(defun org-agent-node-get (node key)
  "Return field KEY, a keyword such as :title, of NODE.
NODE is a node plist (`org-agent-query', `org-agent-node') or a node
record of a `:lazy' query, whose field is read from the store's
result then.  KEY is one of the keys of a node plist or :body."
  (if (org-agent-node-record-p node)
      (org-agent--hit-field (aref node 1) (aref node 2) key)
    (plist-get node key)))

(defun org-agent-node-plist (node &optional fields)
  "Return NODE, a node record of a `:lazy' query, as a node plist.
FIELDS, a list of keys, limits the plist to those keys, as `:fields'
does in `org-agent-query'.  A plist NODE is returned as it is."
  (if (org-agent-node-record-p node)
      (org-agent--hit-plist (aref node 1) (aref node 2) fields)
    node))

(defun org-agent-count (&rest query)
  "Return how many nodes match QUERY (see `org-agent-query')."
  (org-agent--require-started)
  (org-agent--count (org-agent--query-plist query)))

(defun org-agent--query-plist (query)
  "Turn the user-facing QUERY plist into the module's."
  (let (out)
    (while query
      (let ((key (pop query)) (value (pop query)))
        (pcase key
          (:closed-within
           (push :closed-since out)
           (push (format-time-string "%F" (time-subtract nil (days-to-time value))) out))
          (:file (push key out) (push (and value (expand-file-name value)) out))
          (_ (push key out) (push value out)))))
    (nreverse out)))

(defun org-agent-node (id)
  "Return the node with ID as a plist (with :body and :children), or nil."
  (org-agent--require-started)
  (org-agent--node id))

(defun org-agent-node-history (id)
  "Return the versions node ID has had, oldest first, as plists."
  (org-agent--require-started)
  (org-agent--node-history id))

(defun org-agent-outline-path (id)
  "Return the titles of the ancestors of node ID, outermost first."
  (org-agent--require-started)
  (org-agent--outline-path id))

(defun org-agent-node-at-point ()
  "Return the id of the store node at point, or nil.
That is the headline point is in, or the file node before the first
headline, of an Org buffer visiting a file.  A buffer with unsaved
changes, or whose file the store does not have yet, is ingested
first, so the store knows the text the user sees."
  (org-agent--require-started)
  (when (and (derived-mode-p 'org-mode) buffer-file-name)
    (let ((file (expand-file-name buffer-file-name))
          (pos (save-excursion
                 (save-restriction
                   (widen)
                   (if (org-before-first-heading-p)
                       (point-min)
                     (org-back-to-heading t)
                     (point))))))
      (or (and (not (buffer-modified-p)) (org-agent--node-at file pos))
          (progn (org-agent-ingest-buffer)
                 (org-agent--node-at file pos))))))

;;;; Reading a headline

;; `org-agent-find' and the commands that read a headline complete over one
;; string per headline.  Making them all as Lisp strings before the
;; minibuffer opens takes most of a second at a million headlines, and each
;; garbage collection in the minibuffer would mark them again.  So the table
;; makes the full list only when a style or UI asks it for every candidate
;; (once per reading), and the category's default style,
;; `org-agent-substring', has the module match what was typed and make
;; strings for the matches only.

(defcustom org-agent-find-highlight-limit 2000
  "Show what matched in at most this many headlines of `org-agent-find'.
When more match what was typed, none is highlighted: the faces are
put on in Lisp, one string at a time, and at tens of thousands of
matches that takes longer than the matching.  nil: no limit."
  :type '(choice (const :tag "No limit" nil) natnum)
  :group 'org-agent-store)

(defvar org-agent--headline-session nil
  "While a headline is read, a cons whose car is every candidate, once made.")

(defun org-agent--headline-all ()
  "Every candidate, made once per reading of a headline and kept until it ends."
  (if org-agent--headline-session
      (or (car org-agent--headline-session)
          (setcar org-agent--headline-session (org-agent--headline-candidates)))
    (org-agent--headline-candidates)))

(defun org-agent--headline-starting (string)
  "The candidates that start with STRING, or every one when it is empty.
What `all-completions' and `try-completion' for STRING need: made by
the module, unless every candidate was made already."
  (if (or (equal string "") (car org-agent--headline-session))
      (org-agent--headline-all)
    (org-agent--headline-prefixed string completion-ignore-case)))

(defun org-agent--headline-exists-p (string)
  "Whether STRING is a candidate, as `completion-ignore-case' compares.
Asks the module; makes no list of candidates."
  (or (and (org-agent--headline-target string) t)
      (and completion-ignore-case
           (let ((found nil))
             (dolist (c (org-agent--headline-matches string t) found)
               (when (eq t (compare-strings c nil nil string nil nil t))
                 (setq found t)))))))

(defun org-agent--headline-table (string pred action)
  "Completion table of the store's headlines, for STRING, PRED and ACTION.
A table for any completion style or UI: `test-completion' asks the
module, and so do `all-completions' and `try-completion' for a
non-empty STRING (the candidates starting with it); for the empty
STRING they work on every candidate, made once per reading."
  (pcase action
    ('metadata '(metadata (category . org-agent-headline)))
    ('lambda (and (org-agent--headline-exists-p string)
                  (or (null pred) (funcall pred string))
                  t))
    (`(boundaries . ,_) nil)
    (_ (complete-with-action action (org-agent--headline-starting string) string pred))))

(defun org-agent--highlight-words (string matches)
  "Show where the words of STRING are in each of MATCHES.
The first place each word is gets the face `completions-common-part',
as the built-in styles show what matched; MATCHES are changed."
  (let ((regexps (mapcar #'regexp-quote (split-string string " " t)))
        (case-fold-search completion-ignore-case))
    (when regexps
      (dolist (m matches)
        (dolist (re regexps)
          (when (string-match re m)
            (put-text-property (match-beginning 0) (match-end 0)
                               'face 'completions-common-part m)))))))

(defun org-agent--substring-all (string table pred point)
  "The completions of STRING in TABLE under PRED, with POINT in STRING.
On the headline table: the candidates where each space-separated word
of STRING occurs, in any order, matched by the module (the whole list
is never made).  On any other table: the `substring' style's."
  (if (not (eq table #'org-agent--headline-table))
      (completion-substring-all-completions string table pred point)
    (let ((matches (org-agent--headline-matches string completion-ignore-case)))
      (when pred
        (setq matches (delq nil (mapcar (lambda (c) (and (funcall pred c) c)) matches))))
      (when matches
        (when (or (null org-agent-find-highlight-limit)
                  (null (nthcdr org-agent-find-highlight-limit matches)))
          (org-agent--highlight-words string matches))
        (nconc matches 0)))))

(defun org-agent--substring-try (string table pred point)
  "Complete STRING in TABLE under PRED, with POINT in STRING.
As a completion style's try function: nil when nothing matches, t when
STRING is the one match, else (NEWSTRING . NEWPOINT).  On the headline
table one match completes to it, and several extend the last word by
what follows it in all of them.  Elsewhere: the `substring' style's."
  (if (or pred (not (eq table #'org-agent--headline-table)))
      (completion-substring-try-completion string table pred point)
    (pcase (org-agent--headline-complete string completion-ignore-case)
      ('nil nil)
      (`(sole ,sole) (if (equal sole string) t (cons sole (length sole))))
      (`(several ,more)
       (if (and (= point (length string)) (not (equal more "")))
           (let ((new (concat string more)))
             (cons new (length new)))
         (cons string point))))))

(add-to-list 'completion-styles-alist
             '(org-agent-substring
               org-agent--substring-try org-agent--substring-all
               "Each space-separated word anywhere in a store headline, in any order.
The org-agent module matches them, so the millions of candidates of
`org-agent-find' never become Lisp strings.  On other tables this is
the `substring' style."))

;; Headlines are found by any part of their outline path, not only its start.
(add-to-list 'completion-category-defaults
             '(org-agent-headline (styles org-agent-substring basic)))

(defun org-agent--space-separates-words ()
  "Make SPC insert a space in this minibuffer, as it separates words.
The default completion UI binds it to `minibuffer-complete-word'."
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map (current-local-map))
    (define-key map " " #'self-insert-command)
    (use-local-map map)))

(defun org-agent--read-headline (prompt)
  "Read a headline of the store with completion, after PROMPT; return (FILE POS).
Nothing is made before the minibuffer opens: the table and the style
`org-agent-substring' ask the module as the user types.  The module
says which headline the chosen string is, so no table maps them here."
  (when (zerop (org-agent--headline-count))
    (user-error "The org-agent store has no headlines yet; see `org-agent-ingest-directory'"))
  (let* ((org-agent--headline-session (list nil))
         (choice (minibuffer-with-setup-hook #'org-agent--space-separates-words
                   (completing-read prompt #'org-agent--headline-table nil t))))
    (or (org-agent--headline-target choice)
        (user-error "No headline %s in the store now" choice))))

(defun org-agent-store-stats ()
  "Return store statistics as a plist.
Keys: :files :nodes :headlines :versions :duplicate-ids
:bytes-on-disk :snapshots :path :write-error."
  (org-agent--require-started)
  (org-agent--stats))

(defun org-agent-snapshot (&optional label)
  "Take a snapshot of the store, labelled LABEL."
  (org-agent--require-started)
  (org-agent--snapshot (or label (format-time-string "%F %T"))))

(defun org-agent-snapshots ()
  "Return the store snapshots, newest first."
  (org-agent--require-started)
  (org-agent--snapshots))

(defun org-agent-rollback (index)
  "Make snapshot INDEX (0 is the newest) the current store.
This restores the store, not the Org files."
  (org-agent--require-started)
  (org-agent--rollback index))

(defun org-agent-flush ()
  "Wait until every change to the store is on disk."
  (org-agent--require-started)
  (org-agent--store-flush))

(provide 'org-agent-store)
;;; org-agent-store.el ends here
