;;; org-agent-test-server.el --- Drive the scripted LLM test server process -*- lexical-binding: t; -*-

;;; Commentary:

;; The client side of tests/support/server.rs (cargo example
;; llm-test-server): start it, queue its replies, read what it
;; received.  Used by the ERT suites and by the benchmark.

;;; Code:

(require 'json)

(defvar org-agent-test-server--process nil "The server process.")
(defvar org-agent-test-server--port nil "Its port.")
(defvar org-agent-test-server--lines nil "Lines it printed, newest first.")

(defun org-agent-test-server-binary (root &optional release)
  "The test server built from the checkout ROOT (RELEASE: the optimised build).
Build it with cargo when it is missing."
  (let* ((target (or (getenv "CARGO_TARGET_DIR") (expand-file-name "target" root)))
         (binary (expand-file-name (concat (if release "release" "debug") "/examples/llm-test-server")
                                   target)))
    (unless (file-executable-p binary)
      (let ((default-directory root))
        (unless (zerop (apply #'call-process "cargo" nil nil nil "build" "-j2" "--example"
                              "llm-test-server" (and release '("--release"))))
          (error "Cannot build the test server"))))
    binary))

(defun org-agent-test-server--wait (predicate seconds)
  "Wait up to SECONDS for PREDICATE; signal if it stays nil."
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output org-agent-test-server--process 0.05))
    (or (funcall predicate) (error "The test server did not answer in %s s" seconds))))

(defun org-agent-test-server-start (binary)
  "Start a fresh test server from BINARY (stopping a running one); return its port."
  (org-agent-test-server-stop)
  (setq org-agent-test-server--lines nil
        org-agent-test-server--port nil)
  (let ((partial ""))
    (setq org-agent-test-server--process
          (make-process
           :name "llm-test-server" :command (list binary)
           :connection-type 'pipe :noquery t
           :filter (lambda (_ out)
                     (setq partial (concat partial out))
                     (while (string-match "\n" partial)
                       (let ((line (substring partial 0 (match-beginning 0))))
                         (setq partial (substring partial (match-end 0)))
                         (if (string-match "\\`port \\([0-9]+\\)" line)
                             (setq org-agent-test-server--port
                                   (string-to-number (match-string 1 line)))
                           (push line org-agent-test-server--lines))))))))
  (org-agent-test-server--wait (lambda () org-agent-test-server--port) 30))

(defun org-agent-test-server-stop ()
  "Stop the test server."
  (when (process-live-p org-agent-test-server--process)
    (delete-process org-agent-test-server--process))
  (setq org-agent-test-server--process nil))

(defun org-agent-test-server-command (command)
  "Send COMMAND (an alist for `json-encode') to the server; return its answer line."
  (let ((before (length org-agent-test-server--lines)))
    (process-send-string org-agent-test-server--process (concat (json-encode command) "\n"))
    (org-agent-test-server--wait (lambda () (> (length org-agent-test-server--lines) before)) 30)
    (car org-agent-test-server--lines)))

(defun org-agent-test-server-push (&rest reply)
  "Queue REPLY, a plist such as (:text \"Hi\" :drip_ms 10), for the next request.
Keys and values are those of the server's JSON (see tests/support/server.rs)."
  (let ((alist nil))
    (while reply
      (push (cons (substring (symbol-name (pop reply)) 1) (pop reply)) alist))
    (let ((answer (org-agent-test-server-command `((push . ,(nreverse alist))))))
      (unless (equal answer "ok")
        (error "The test server refused the reply: %s" answer)))))

(defun org-agent-test-server--read (command prefix)
  "Send COMMAND and parse the JSON after PREFIX in its answer."
  (let ((line (org-agent-test-server-command command))
        (json-array-type 'list)
        (json-object-type 'alist)
        (json-key-type 'string))
    (unless (string-prefix-p prefix line)
      (error "Unexpected answer from the test server: %s" line))
    (json-read-from-string (substring line (length prefix)))))

(defun org-agent-test-server-requests ()
  "The request bodies the server received so far (parsed JSON: alists, lists)."
  (org-agent-test-server--read '((requests . t)) "requests "))

(defun org-agent-test-server-times ()
  "When each request had arrived, in Unix seconds."
  (org-agent-test-server--read '((times . t)) "times "))

(provide 'org-agent-test-server)
;;; org-agent-test-server.el ends here
