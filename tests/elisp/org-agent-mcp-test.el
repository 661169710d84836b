;;; org-agent-mcp-test.el --- MCP both ways, in real Emacs -*- lexical-binding: t; -*-

;;; Commentary:

;; Real Emacs, the real module and chat, the scripted LLM server, and
;; real MCP peers written with the official TypeScript SDK from npm
;; (tests/mcp/, installed by scripts/mcp-peers): the chat offers a
;; server's tools as SERVER__TOOL, a call asks unless a permission rule
;; allows it, its result reaches the model as untrusted data;
;; `M-x org-agent-mcp' lists the servers; `org-agent-mcp-server-mode'
;; serves the notes to the SDK's client behind a token, private notes
;; absent, secrets withheld, edits queued for approval.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-chat)
(require 'org-agent-mcp)
(require 'org-agent-approvals)
(require 'org-agent-test-server)
(require 'json)
(require 'cl-lib)

(defun org-agent-mcp-test--peers ()
  "The directory holding the MCP peers' packages (installed on first use)."
  (with-temp-buffer
    (let ((status (call-process (expand-file-name "scripts/mcp-peers" org-agent-test-root)
                                nil (list t nil) nil "path")))
      (should (eq status 0))
      (string-trim (buffer-string)))))

(defun org-agent-mcp-test--servers (&optional hostile)
  "The test MCP server over stdio as `test' (with injected text when HOSTILE)."
  `(("test" . (:command "node"
               :args (,(expand-file-name "tests/mcp/test-server.mjs" org-agent-test-root) "stdio")
               :env (:ORG_AGENT_MCP_PEERS_DIR ,(org-agent-mcp-test--peers)
                     ,@(and hostile '(:MCP_TEST_HOSTILE "1")))
               :call-timeout 20))))

(defun org-agent-mcp-test--tool-messages (n)
  "The contents of the `tool' messages of the Nth request the LLM server received."
  (delq nil (mapcar (lambda (m) (and (equal (cdr (assoc "role" m)) "tool")
                                     (cdr (assoc "content" m))))
                    (cdr (assoc "messages" (nth n (org-agent-test-server-requests)))))))

(defun org-agent-mcp-test--tool-names (n)
  "The names of the tools offered in the Nth request the LLM server received."
  (mapcar (lambda (tool) (cdr (assoc "name" (cdr (assoc "function" tool)))))
          (cdr (assoc "tools" (nth n (org-agent-test-server-requests))))))

(defmacro org-agent-mcp-test--with-chat (bindings &rest body)
  "Run BODY in a fresh chat with BINDINGS, the test MCP server configured."
  (declare (indent 1) (debug t))
  `(org-agent-test-with-server
       ((org-agent-chat-ask-in-batch t)
        (org-agent-mcp-servers (org-agent-mcp-test--servers))
        ,@bindings)
     (unwind-protect
         (progn
           (org-agent-test-kill-chat)
           (with-current-buffer (org-agent-chat)
             ,@body))
       (org-agent--mcp-configure nil)
       (setq org-agent-mcp--sent 'none))))

(ert-deftest org-agent-mcp-a-server-tool-allowed-by-a-rule-runs-and-is-untrusted ()
  "A rule allows test__echo: it runs without asking; its result reaches the model spotlighted."
  (org-agent-mcp-test--with-chat
      ((org-agent-permissions '((allow mcp "test__echo" :match ("test__echo")
                                       :not-match ("test__die")))))
    (org-agent-test-server-push :text "" :calls [("test__echo" ((text . "ECHO-MARK")))])
    (org-agent-test-server-push :text "It said ECHO-MARK.")
    (funcall send "Echo something.")
    (should (org-agent-test-wait (lambda () finished) 90))
    (should (member "test__echo" (org-agent-mcp-test--tool-names 0)))
    (should (member "query_notes" (org-agent-mcp-test--tool-names 0)))
    (should-not (string-search "Approve?" (buffer-string)))
    (let ((result (car (org-agent-mcp-test--tool-messages 1))))
      (should (string-search "ECHO-MARK" result))
      ;; Untrusted: fenced by the request's boundary, not bare.
      (should-not (equal result "ECHO-MARK")))
    (should (equal (cadr finished) "It said ECHO-MARK."))
    ;; The list of servers shows it running, with its tools and the call.
    (org-agent-mcp)
    (with-current-buffer org-agent-mcp-list-buffer
      (should (string-match-p "^ *test +running +[0-9]+ +1 " (buffer-string)))
      (kill-buffer))))

(ert-deftest org-agent-mcp-a-server-tool-asks-by-default ()
  "Without a rule, a call of an MCP tool asks; denied, the server is never called."
  (org-agent-mcp-test--with-chat ()
    (org-agent-test-server-push :text "" :calls [("test__echo" ((text . "ASKED-MARK")))])
    (org-agent-test-server-push :text "Fine.")
    (funcall send "Echo something.")
    (should (org-agent-test-wait (lambda () org-agent-chat--question) 90))
    (should (string-search "test__echo" (buffer-string)))
    (call-interactively (key-binding "n"))
    (should (org-agent-test-wait (lambda () finished) 60))
    (should (string-search "denied" (car (org-agent-mcp-test--tool-messages 1))))
    (should (= 0 (plist-get (car (org-agent--mcp-status)) :calls)))))

(ert-deftest org-agent-mcp-wrong-arguments-and-a-dead-server-are-clear-errors ()
  "Arguments against the schema never reach the server; a server dying mid-call is an error.
The next call starts it again."
  (org-agent-mcp-test--with-chat
      ((org-agent-permissions '((allow mcp "test__*"))))
    (org-agent-test-server-push :text "" :calls [("test__add" ((a . "one") (b . 2)))])
    (org-agent-test-server-push :text "" :calls [("test__die" nil)])
    (org-agent-test-server-push :text "" :calls [("test__echo" ((text . "BACK-MARK")))])
    (org-agent-test-server-push :text "Done.")
    (funcall send "Try things.")
    ;; After an MCP tool's result (untrusted), even an allowed MCP call asks: the wall holds.
    (should (org-agent-test-wait (lambda () (or finished org-agent-chat--question)) 120))
    (should org-agent-chat--question)
    (should (string-search "untrusted" (buffer-string)))
    (call-interactively (key-binding "y"))
    (should (org-agent-test-wait (lambda () finished) 120))
    (should (string-search "must be a number" (car (org-agent-mcp-test--tool-messages 1))))
    (should (string-search "failed during the call" (nth 1 (org-agent-mcp-test--tool-messages 2))))
    (should (string-search "BACK-MARK" (nth 2 (org-agent-mcp-test--tool-messages 3))))))

(ert-deftest org-agent-mcp-a-bad-server-list-is-a-clear-error ()
  "A list mcp.el would not take either is refused with what is wrong."
  (let ((org-agent-mcp-servers '(("x" . (:command "a" :url "http://b"))))
        (org-agent-mcp--sent 'none))
    (should (string-search "not both"
                           (cadr (should-error (org-agent-mcp-sync)
                                               :type 'org-agent-config-error)))))
  (setq org-agent-mcp--sent 'none))

;;;; org-agent as a server

(defun org-agent-mcp-test--client (&rest args)
  "Run the SDK's client driver with ARGS; return its JSON output, parsed."
  (with-temp-buffer
    (let ((process-environment (cons (concat "ORG_AGENT_MCP_PEERS_DIR=" (org-agent-mcp-test--peers))
                                     process-environment)))
      (apply #'call-process "node" nil (list t nil) nil
             (expand-file-name "tests/mcp/client.mjs" org-agent-test-root) args))
    (goto-char (point-min))
    (json-parse-buffer :object-type 'alist :array-type 'list)))

(defun org-agent-mcp-test--text (result)
  "The text of the first content block of the client's RESULT."
  (alist-get 'text (car (alist-get 'content (alist-get 'result result)))))

(ert-deftest org-agent-mcp-server-mode-serves-the-notes-as-read-node-shows-them ()
  "An outside client needs the token, reads only what read_node shows, and only proposes edits."
  (org-agent-test-with-store
    (let* ((dir (make-temp-file "org-agent-mcp-notes" t))
           (file (expand-file-name "notes.org" dir))
           (org-agent-directories (list dir))
           (org-agent-mcp-server-port 0))
      (with-temp-file file
        (insert "* TODO Call the plumber :home:\n:PROPERTIES:\n:ID: mcp-task\n:END:\n"
                "Key AKIAIOSFODNN7EXAMPLE in the note.\n"
                "* Diary :private:\n:PROPERTIES:\n:ID: mcp-private\n:END:\nPRIVATE-MARK\n"))
      (org-agent--ingest-file file t)
      (unwind-protect
          (progn
            (org-agent-mcp-server-mode 1)
            (let* ((server-file (expand-file-name "mcp-server.json" org-agent-state-directory))
                   (where (json-read-file server-file))
                   (url (alist-get 'url where))
                   (token (alist-get 'token where)))
              (should (= (file-modes server-file) #o600))
              (should (string-match-p "\\`http://127\\.0\\.0\\.1:[0-9]+/mcp\\'" url))
              (should (equal (org-agent--mcp-serving) url))
              ;; The SDK's client lists the tools.
              (let ((names (mapcar (lambda (tool) (alist-get 'name tool))
                                   (alist-get 'tools (org-agent-mcp-test--client "http" url token "list")))))
                (should (member "read_node" names))
                (should (member "query_notes" names))
                (should (member "set_todo" names))
                ;; No embedding backend: no search by meaning offered.
                (should-not (member "semantic_search" names)))
              ;; Reads: the task, its secret withheld; the private note absent.
              (let ((task (org-agent-mcp-test--text
                           (org-agent-mcp-test--client "http" url token "call" "read_node"
                                                       "{\"id\":\"mcp-task\"}"))))
                (should (string-search "Call the plumber" task))
                (should-not (string-search "AKIAIOSFODNN7EXAMPLE" task)))
              (let ((private (org-agent-mcp-test--text
                              (org-agent-mcp-test--client "http" url token "call" "read_node"
                                                          "{\"id\":\"mcp-private\"}"))))
                (should-not (string-search "PRIVATE-MARK" private)))
              (let ((all (org-agent-mcp-test--text
                          (org-agent-mcp-test--client "http" url token "call" "search_notes"
                                                      "{\"text\":\"PRIVATE-MARK\"}"))))
                (should-not (string-search "Diary" all)))
              ;; An edit is a proposal: queued, not run.
              (let ((said (org-agent-mcp-test--text
                           (org-agent-mcp-test--client "http" url token "call" "set_todo"
                                                       "{\"id\":\"mcp-task\",\"state\":\"DONE\"}"))))
                (should (string-search "waits in the user's approvals queue" said)))
              (should (org-agent-test-wait
                       (lambda () (seq-find (lambda (p) (equal (plist-get p :tool) "set_todo"))
                                            (org-agent--approvals nil)))
                       10))
              (org-agent-process-events)
              (with-temp-buffer
                (insert-file-contents file)
                (should (string-search "* TODO Call the plumber" (buffer-string))))
              ;; Without the token, or with another: refused.
              (let ((checks (alist-get 'checks (org-agent-mcp-test--client "raw" url token))))
                (cl-flet ((status (name) (alist-get 'status (seq-find (lambda (c) (equal (alist-get 'name c) name))
                                                                      checks))))
                  (should (equal (status "no-token") 401))
                  (should (equal (status "wrong-token") 401))
                  ;; Malformed and oversized requests: refused, and the server goes on.
                  (should (member (status "not-json") '(400 415 422)))
                  (should (equal (status "oversized-64MB") 413))
                  (should (integerp (status "batch-1000")))))
              (should (member "read_node"
                              (mapcar (lambda (tool) (alist-get 'name tool))
                                      (alist-get 'tools (org-agent-mcp-test--client "http" url token "list")))))
              ;; The stdio bridge, for clients that only launch commands.
              (let ((names (mapcar (lambda (tool) (alist-get 'name tool))
                                   (alist-get 'tools
                                              (org-agent-mcp-test--client
                                               "stdio" "--" (expand-file-name "bin/org-agent-mcp-stdio" org-agent-test-root)
                                               org-agent-state-directory "--" "list")))))
                (should (member "read_node" names)))
              (org-agent-mcp-server-mode -1)
              (should-not (file-exists-p server-file))
              (should-not (org-agent--mcp-serving))))
        (org-agent-mcp-server-mode -1)
        (delete-directory dir t)))))

;; The client, run asynchronously: while it waits for the user's answer,
;; Emacs must go on running timers to ask.
(defun org-agent-mcp-test--client-async (&rest args)
  "Start the SDK's client driver with ARGS; return its process.
Its output collects in the process buffer."
  (let ((process-environment (cons (concat "ORG_AGENT_MCP_PEERS_DIR=" (org-agent-mcp-test--peers))
                                   process-environment)))
    (make-process :name "org-agent-mcp-client"
                  :buffer (generate-new-buffer " *mcp-client*")
                  :stderr (get-buffer-create " *mcp-client-stderr*")
                  :command (append (list "node" (expand-file-name "tests/mcp/client.mjs"
                                                                  org-agent-test-root))
                                   args))))

(ert-deftest org-agent-mcp-server-asks-in-emacs-for-the-clients-named ()
  "A named client's edit is asked about at once and its call waits for the answer.
y applies it; a client not named only queues."
  (org-agent-test-with-store
    (let* ((dir (make-temp-file "org-agent-mcp-notes" t))
           (file (expand-file-name "notes.org" dir))
           (org-agent-directories (list dir))
           (org-agent-mcp-server-port 0)
           (org-agent-mcp-server-ask-clients '("org-agent-test-client"))
           (org-agent-mcp-server-ask-seconds 60)
           (asked nil))
      (with-temp-file file
        (insert "* TODO Call the plumber\n:PROPERTIES:\n:ID: mcp-ask\n:END:\n"))
      (org-agent--ingest-file file t)
      ;; Loaded first, or loading it later would put the real one back.
      (require 'rmc)
      (unwind-protect
          (cl-letf (((symbol-function 'read-multiple-choice)
                     (lambda (prompt _choices &rest _)
                       (push prompt asked)
                       '(?y "apply"))))
            (org-agent-mcp-server-mode 1)
            (let* ((where (json-read-file (expand-file-name "mcp-server.json"
                                                            org-agent-state-directory)))
                   (client (org-agent-mcp-test--client-async
                            "http" (alist-get 'url where) (alist-get 'token where) "call"
                            "set_todo" "{\"id\":\"mcp-ask\",\"state\":\"DONE\"}")))
              (should (org-agent-test-wait
                       (lambda () (org-agent-process-events)
                         (not (process-live-p client)))
                       60))
              (should (string-search "org-agent-test-client asks to set_todo" (car asked)))
              (let ((said (with-current-buffer (process-buffer client)
                            (goto-char (point-min))
                            (org-agent-mcp-test--text
                             (json-parse-buffer :object-type 'alist :array-type 'list)))))
                (should (string-search "The user approved proposal" said)))
              (with-temp-buffer
                (insert-file-contents file)
                (should (string-search "* DONE Call the plumber" (buffer-string)))))
            ;; Another client's edits wait in the queue; nothing asks.
            (org-agent-mcp-server-mode -1)
            (setq asked nil)
            (let ((org-agent-mcp-server-ask-clients '("someone-else")))
              (org-agent-mcp-server-mode 1)
              (let* ((where (json-read-file (expand-file-name "mcp-server.json"
                                                              org-agent-state-directory)))
                     (said (org-agent-mcp-test--text
                            (org-agent-mcp-test--client
                             "http" (alist-get 'url where) (alist-get 'token where) "call"
                             "set_todo" "{\"id\":\"mcp-ask\",\"state\":\"TODO\"}"))))
                (should (string-search "waits in the user's approvals queue" said))
                (org-agent-process-events)
                (sit-for 0.2)
                (should-not asked))))
        (org-agent-mcp-server-mode -1)
        (delete-directory dir t)))))

(provide 'org-agent-mcp-test)
;;; org-agent-mcp-test.el ends here
