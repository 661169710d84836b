;;; org-agent-mcp.el --- MCP both ways: servers the agent uses, the server it offers -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The agent uses the tools of the MCP servers in `org-agent-mcp-servers'
;; (the format of mcp.el's `mcp-hub-servers', so a list made for it works
;; as is).  Their tools reach the model as SERVER__TOOL; every call asks
;; unless `org-agent-permissions' says otherwise, for instance
;;
;;   (allow mcp "files__read_*" :match ("files__read_text_file"))
;;
;; and what they return is untrusted: an edit after it asks.  Servers
;; start when a chat turn first needs them, on a worker, each within its
;; :timeout.  `M-x org-agent-mcp' lists them, their state and tools, and
;; restarts one; `org-agent-mcp-add-resource' adds a server's resource to
;; the context; `org-agent-mcp-insert-prompt' inserts one of its prompts.
;;
;; `org-agent-mcp-server-mode' serves the notes to other agents (Claude
;; Code, Codex, any MCP client) over Streamable HTTP on 127.0.0.1, behind
;; a token written to mcp-server.json in the state directory: they read
;; what `read_node' would show, and their edits wait in M-x
;; org-agent-approvals.

;;; Code:

(require 'org-agent-base)
(require 'org-agent-store)
(require 'org-agent-dispatch)
(require 'org-agent-permissions)
(require 'org-agent-context)
(require 'org-agent-semantic)
(require 'auth-source)
(require 'tabulated-list)
(require 'subr-x)
(org-agent--declare-module-functions)

(defvar org-agent-audit-file)
;; org-agent-approvals needs the chat, which needs this file: the functions it lends the
;; asking below are there by the time a proposal arrives.
(declare-function org-agent-approvals-list "org-agent-approvals" (&optional all))
(declare-function org-agent-approvals-approve "org-agent-approvals" (id))
(declare-function org-agent-approvals-deny "org-agent-approvals" (id))

(defcustom org-agent-mcp-servers nil
  "The MCP servers whose tools the agent may use, as mcp.el's `mcp-hub-servers'.
Each entry is (NAME . PLIST): a command, (\"files\" . (:command \"npx\"
:args (\"-y\" \"@modelcontextprotocol/server-filesystem\" \"~/notes\")
:env (:DEBUG \"1\"))), or an address, (\"remote\" . (:url
\"https://example.com/mcp\" :headers (:Authorization VALUE))).  A header
or environment VALUE may be (:auth-source HOST [:user USER] [:prefix
\"Bearer \"]): the secret of that auth-source entry, looked up when the
list is handed over.  org-agent's own keys: :timeout, the seconds a
server may take to start (30), and :call-timeout, the seconds one call
may take (120).  Tools are named SERVER__TOOL."
  :type '(alist :key-type (string :tag "Name") :value-type (plist :tag "Server"))
  :group 'org-agent-mcp)

(defcustom org-agent-mcp-server-port 0
  "The port `org-agent-mcp-server-mode' listens on, on 127.0.0.1.
0 is any free one.
Clients find it, and the token, in mcp-server.json in
`org-agent-state-directory'."
  :type 'integer
  :group 'org-agent-mcp)

(defcustom org-agent-mcp-server-ask-clients nil
  "The outside agents whose edits Emacs asks you about as they arrive.
Each is an MCP client's name as it introduces itself (\"claude-code\"),
or t for every client.  Their edits are judged by the gates and
`org-agent-permissions' and queued like any other; with this, Emacs
also asks at once (y applies, n denies, q leaves it in the queue)
and the client waits for your answer, up to
`org-agent-mcp-server-ask-seconds'.  Other clients' edits wait in
\[org-agent-approvals].  Takes effect when the server starts."
  :type '(choice (const :tag "No client" nil)
                 (const :tag "Every client" t)
                 (repeat (string :tag "Client name")))
  :group 'org-agent-mcp)

(defcustom org-agent-mcp-server-ask-seconds 50
  "How long an edit Emacs asks about keeps its MCP client waiting.
After that the client is told the edit waits in the approvals queue;
your answer still applies or denies it.  Many clients give up on a
call after 60 seconds."
  :type 'natnum
  :group 'org-agent-mcp)

(defvar org-agent-mcp--sent 'none
  "The server list last handed to the module.
An unchanged one is not sent again.")

(defun org-agent-mcp--secret (spec)
  "The secret SPEC, (:auth-source HOST [:user USER] [:prefix PREFIX]), names."
  (let* ((found (car (auth-source-search :host (plist-get spec :auth-source)
                                         :user (plist-get spec :user)
                                         :max 1)))
         (secret (plist-get found :secret)))
    (unless secret
      (user-error "No auth-source entry for the MCP host %s"
                  (plist-get spec :auth-source)))
    (concat (or (plist-get spec :prefix) "")
            (if (functionp secret) (funcall secret) secret))))

(defun org-agent-mcp--resolve-values (pairs)
  "PAIRS (a plist or an alist) as an alist of strings, secrets looked up.
Names go as strings: the module reads keywords lowercased, and an
environment variable's name has a case."
  (let ((alist (if (and (consp (car-safe pairs)) (not (keywordp (car-safe pairs))))
                   pairs
                 (let (out)
                   (while pairs
                     (push (cons (car pairs) (cadr pairs)) out)
                     (setq pairs (cddr pairs)))
                   (nreverse out)))))
    (mapcar (lambda (p)
              (let ((name (car p)) (value (cdr p)))
                (cons (if (symbolp name) (string-remove-prefix ":" (symbol-name name)) name)
                      (if (and (consp value) (plist-get value :auth-source))
                          (org-agent-mcp--secret value)
                        value))))
            alist)))

(defun org-agent-mcp--resolved ()
  "`org-agent-mcp-servers' with its auth-source values looked up."
  (mapcar (lambda (entry)
            (let ((plist (copy-sequence (cdr entry))))
              (dolist (key '(:headers :env))
                (when (plist-get plist key)
                  (setq plist (plist-put plist key (org-agent-mcp--resolve-values
                                                    (plist-get plist key))))))
              (cons (car entry) plist)))
          org-agent-mcp-servers))

(defun org-agent-mcp-sync ()
  "Hand `org-agent-mcp-servers' to the module if it changed since the last time.
Chat turns call this before they are sent; the servers start when a turn
needs their tools."
  (unless (equal org-agent-mcp--sent org-agent-mcp-servers)
    (org-agent--mcp-configure (org-agent-mcp--resolved))
    (setq org-agent-mcp--sent (copy-tree org-agent-mcp-servers))))

;;;; The list of servers

(defvar org-agent-mcp-list-buffer "*org-agent-mcp*"
  "The buffer `org-agent-mcp' shows the servers in.")

(defvar org-agent-mcp-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "r") #'org-agent-mcp-restart)
    (define-key map (kbd "RET") #'org-agent-mcp-describe)
    (define-key map (kbd "a") #'org-agent-mcp-add-resource)
    map)
  "Keys of the MCP servers' list.")

(define-derived-mode org-agent-mcp-mode tabulated-list-mode "org-agent MCP"
  "Show the MCP servers org-agent uses: their state, tools and calls.
\\<org-agent-mcp-mode-map>\\[org-agent-mcp-restart] restarts the server at point,
\\[org-agent-mcp-describe] lists its tools, \\[org-agent-mcp-add-resource] adds
one of its resources to the context, \\[revert-buffer] refreshes."
  (setq tabulated-list-format [("Server" 16 t) ("State" 9 t) ("Tools" 6 t)
                               ("Calls" 6 t) ("Failed" 6 t) ("Said" 0 nil)])
  (setq tabulated-list-padding 1)
  (add-hook 'tabulated-list-revert-hook #'org-agent-mcp--fill nil t)
  (tabulated-list-init-header))

(defun org-agent-mcp--fill ()
  "Fill the list from the module's state of the servers."
  (setq tabulated-list-entries
        (mapcar (lambda (s)
                  (list (plist-get s :name)
                        (vector (plist-get s :name)
                                (symbol-name (plist-get s :state))
                                (number-to-string (length (plist-get s :tools)))
                                (number-to-string (plist-get s :calls))
                                (number-to-string (plist-get s :failures))
                                (or (plist-get s :message) ""))))
                (org-agent--mcp-status))))

(defun org-agent-mcp--ready ()
  "Start org-agent if need be and hand the module the servers as configured now."
  (org-agent--require-started)
  (org-agent-mcp-sync))

;;;###autoload
(defun org-agent-mcp ()
  "List the MCP servers, their state and tools; restart one with r.
The line above the list says whether `org-agent-mcp-server-mode' serves
the notes, and where."
  (interactive)
  (org-agent-mcp--ready)
  (with-current-buffer (get-buffer-create org-agent-mcp-list-buffer)
    (org-agent-mcp-mode)
    (org-agent-mcp--fill)
    (tabulated-list-print t)
    (setq header-line-format
          (let ((url (org-agent--mcp-serving)))
            (if url (format " Serving the notes at %s" url)
              (if org-agent-mcp-servers " Not serving the notes (M-x org-agent-mcp-server-mode)"
                " No servers: set org-agent-mcp-servers")))))
  (pop-to-buffer org-agent-mcp-list-buffer))

(defun org-agent-mcp--server-at-point ()
  "The name of the server at point, or one asked for."
  (or (and (derived-mode-p 'org-agent-mcp-mode) (tabulated-list-get-id))
      (completing-read "MCP server: " (mapcar #'car org-agent-mcp-servers) nil t)))

(defun org-agent-mcp--refresh ()
  "Refresh the list of servers if it is shown."
  (when-let ((buffer (get-buffer org-agent-mcp-list-buffer)))
    (with-current-buffer buffer
      (org-agent-mcp--fill)
      (tabulated-list-print t))))

(defun org-agent-mcp--request (request then)
  "Call THEN with the :value of the `mcp' event of REQUEST; say a failure."
  (org-agent--add-callback
   request
   (lambda (event)
     (if (eq (plist-get event :type) 'mcp)
         (funcall then (plist-get event :value))
       (message "org-agent: %s" (plist-get event :message))
       (org-agent-mcp--refresh)))))

(defun org-agent-mcp-restart (name)
  "Stop the MCP server NAME and start it again, on a worker."
  (interactive (list (org-agent-mcp--server-at-point)))
  (org-agent-mcp--ready)
  (org-agent-mcp--request
   (org-agent--mcp-restart name)
   (lambda (status)
     (message "org-agent: MCP server %s is %s with %d tools" name
              (plist-get status :state) (length (plist-get status :tools)))
     (org-agent-mcp--refresh)))
  (message "org-agent: restarting the MCP server %s..." name)
  (org-agent-mcp--refresh))

(defun org-agent-mcp-describe (name)
  "Show the tools of the MCP server NAME, and those it does not offer, with why."
  (interactive (list (org-agent-mcp--server-at-point)))
  (let ((status (seq-find (lambda (s) (equal (plist-get s :name) name))
                          (org-agent--mcp-status))))
    (with-help-window (format "*org-agent-mcp %s*" name)
      (princ (format "MCP server %s: %s\n%s\n\nTools offered to the model:\n" name
                     (plist-get status :state) (or (plist-get status :message) "")))
      (dolist (tool (plist-get status :tools)) (princ (format "  %s\n" tool)))
      (when (plist-get status :skipped)
        (princ "\nNot offered:\n")
        (dolist (why (plist-get status :skipped)) (princ (format "  %s\n" why)))))))

(defun org-agent-mcp-status-section ()
  "Insert the MCP section of `org-agent-status': the servers used and served."
  (insert "* MCP\n")
  (let ((url (org-agent--mcp-serving)))
    (insert (format "- serving the notes :: %s\n"
                    (if url (format "at %s (org-agent-mcp-server-mode)" url) "no"))))
  (dolist (s (org-agent--mcp-status))
    (insert (format "- %s :: %s, %d tools, %d calls, %d failures%s\n"
                    (plist-get s :name) (plist-get s :state)
                    (length (plist-get s :tools)) (plist-get s :calls)
                    (plist-get s :failures)
                    (if (plist-get s :message) (format " (%s)" (plist-get s :message)) "")))))

;;;; Resources and prompts

(defun org-agent-mcp-add-resource (name)
  "Add a resource of the MCP server NAME to the context of what you ask next.
Its text counts as untrusted, as any text that is not a note."
  (interactive (list (org-agent-mcp--server-at-point)))
  (org-agent-mcp--ready)
  (org-agent-mcp--request
   (org-agent--mcp-resources name)
   (lambda (resources)
     (if (null resources)
         (message "org-agent: the MCP server %s offers no resources" name)
       ;; Out of the process filter before reading from the minibuffer.
       (run-at-time 0 nil #'org-agent-mcp--choose-resource name resources))))
  (message "org-agent: asking %s for its resources..." name))

(defun org-agent-mcp--choose-resource (name resources)
  "Let the user pick one of RESOURCES of NAME and add it to the context."
  (let* ((table (mapcar (lambda (r) (cons (if (string-empty-p (nth 1 r)) (car r)
                                            (format "%s  (%s)" (car r) (nth 1 r)))
                                          (car r)))
                        resources))
         (uri (cdr (assoc (completing-read (format "Resource of %s: " name) table nil t)
                          table))))
    (org-agent-mcp--request
     (org-agent--mcp-read-resource name uri)
     (lambda (text)
       (org-agent-context-add-text
        (format "the resource %s of the MCP server %s" uri name) text)))))

(defun org-agent-mcp-insert-prompt (name)
  "Insert at point a prompt of the MCP server NAME, asking for its arguments."
  (interactive (list (org-agent-mcp--server-at-point)))
  (org-agent-mcp--ready)
  (let ((buffer (current-buffer)) (point (point-marker)))
    (org-agent-mcp--request
     (org-agent--mcp-prompts name)
     (lambda (prompts)
       (run-at-time
        0 nil
        (lambda ()
          (let* ((prompt (assoc (completing-read (format "Prompt of %s: " name)
                                                 (mapcar #'car prompts) nil t)
                                prompts))
                 (args (mapcar (lambda (arg) (cons arg (read-string (format "%s: " arg))))
                               (nth 2 prompt))))
            (org-agent-mcp--request
             (org-agent--mcp-get-prompt name (car prompt) args)
             (lambda (text)
               (when (buffer-live-p buffer)
                 (with-current-buffer buffer
                   (save-excursion (goto-char point) (insert text)))))))))))))

;;;; Serving the notes

(defun org-agent-mcp--asks-p (client)
  "Whether the edits of the MCP client CLIENT are asked about at once."
  (or (eq org-agent-mcp-server-ask-clients t)
      (and (listp org-agent-mcp-server-ask-clients)
           (member client org-agent-mcp-server-ask-clients))))

(defun org-agent-mcp--ask-soon (event)
  "Ask about the proposal of the queued EVENT, if its MCP client asks.
From a timer: the event arrives while events are being handled."
  (let ((skill (plist-get event :skill)))
    (when (and (stringp skill) (string-prefix-p "mcp:" skill)
               (org-agent-mcp--asks-p (substring skill 4)))
      (run-at-time 0 nil #'org-agent-mcp--ask
                   (plist-get event :proposal) (substring skill 4)))))

(add-hook 'org-agent-approvals-queued-functions #'org-agent-mcp--ask-soon 90)

(defun org-agent-mcp--ask (id client)
  "Ask whether to apply proposal ID, an edit the MCP client CLIENT asked for.
Its diff is shown when Emacs could preview it.  y applies it, n denies
it, q leaves it in \[org-agent-approvals]."
  (let ((proposal (seq-find (lambda (p) (eql (plist-get p :id) id))
                            (org-agent-approvals-list))))
    (when (eq (plist-get proposal :state) 'pending)
      (save-window-excursion
        (when-let ((diff (plist-get proposal :diff)))
          (with-current-buffer (get-buffer-create "*org-agent-mcp-edit*")
            (let ((inhibit-read-only t))
              (erase-buffer)
              (insert diff))
            (diff-mode)
            (display-buffer (current-buffer))))
        (pcase (car (read-multiple-choice
                     (format "The MCP client %s asks to %s: %s"
                             client (plist-get proposal :tool)
                             (truncate-string-to-width
                              (prin1-to-string (plist-get proposal :action)) 70 nil nil "…"))
                     '((?y "apply" "Apply the edit now")
                       (?n "deny" "Deny it; it does not run")
                       (?q "later" "Leave it in the approvals queue"))))
          (?y (condition-case err
                  (org-agent-approvals-approve id)
                (user-error (message "%s" (error-message-string err)))))
          (?n (org-agent-approvals-deny id)))))))

(defun org-agent-mcp--stop-serving ()
  "Stop serving, if the module is there."
  (when (fboundp 'org-agent--mcp-stop-serving)
    (org-agent--mcp-stop-serving)))

(defcustom org-agent-mcp-server-mode-hook nil
  "Functions run when `org-agent-mcp-server-mode' is turned on or off."
  :type 'hook
  :group 'org-agent-mcp)

;;;###autoload
(define-minor-mode org-agent-mcp-server-mode
  "Serve the notes to other agents over MCP (Streamable HTTP on 127.0.0.1).
The address and a fresh token go to mcp-server.json (readable by you
only) in `org-agent-state-directory'; every request must carry
\"Authorization: Bearer TOKEN\".  Clients read notes as `read_node'
shows them (private notes absent, secrets withheld); the edits they ask
for are judged by `org-agent-permissions' and wait in
\\[org-agent-approvals]."
  :global t
  :group 'org-agent-mcp
  (if (not org-agent-mcp-server-mode)
      (org-agent-mcp--stop-serving)
    (org-agent--require-started)
    ;; Clients see the notes under the privacy rules and directories in force now.
    (org-agent--send-privacy)
    (condition-case err
        (pcase-let ((`(,url . ,file)
                     (org-agent--mcp-serve
                      org-agent-mcp-server-port
                      (expand-file-name org-agent-state-directory)
                      org-agent-permissions
                      (expand-file-name (or (bound-and-true-p org-agent-audit-file)
                                            (expand-file-name "audit.org"
                                                              org-agent-state-directory)))
                      (org-agent-semantic-backend)
                      (cons org-agent-mcp-server-ask-clients
                            org-agent-mcp-server-ask-seconds))))
          (add-hook 'kill-emacs-hook #'org-agent-mcp--stop-serving)
          (message "org-agent: serving the notes at %s (token in %s)" url file))
      (error (setq org-agent-mcp-server-mode nil)
             (signal (car err) (cdr err))))))

(provide 'org-agent-mcp)
;;; org-agent-mcp.el ends here
