;;; org-agent-shell-test.el --- The shell tool end to end in real Emacs -*- lexical-binding: t; -*-

;;; Commentary:

;; Real Emacs, the real module and chat buffer, real processes,
;; against the scripted test server: the model calls `run_command';
;; a read-only command runs at once, another asks and runs once
;; approved, a destructive one is denied; a long command is killed
;; with its whole process group when the turn is interrupted, and
;; one that outlives `org-agent-shell-timeout' is killed too.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-chat)
(require 'org-agent-test-server)
(require 'cl-lib)
(require 'json)

(defmacro org-agent-shell-test--with-chat (&rest body)
  "Run BODY in a fresh chat whose commands run in a fresh directory `root'.
`finished' holds (CONVERSATION ANSWER) once a turn ends."
  (declare (indent 0) (debug t))
  `(org-agent-test-with-server
       ((root (file-name-as-directory (make-temp-file "org-agent-shell" t)))
        (org-agent-shell--roots (list root))
        ;; The sandbox lets an approved command write only where the user said.
        (org-agent-shell-writable-directories (list root))
        (org-agent-permissions '((allow run_command)))
        (org-agent-chat-ask-in-batch t))
     (unwind-protect
         (progn
           (with-temp-file (expand-file-name "inbox.org" root)
             (insert "* TODO Buy milk\n"))
           (org-agent-test-kill-chat)
           (with-current-buffer (org-agent-chat)
             ,@body))
       (delete-directory root t))))

(defun org-agent-shell-test--send (text)
  "Type TEXT in the chat and send it."
  (goto-char (point-max))
  (insert text)
  (org-agent-chat-send))

(defun org-agent-shell-test--tool-messages ()
  "The tool results of the last request the server received, out of their data blocks."
  (let ((body (car (last (org-agent-test-server-requests)))))
    (delq nil (mapcar (lambda (m) (and (equal (cdr (assoc "role" m)) "tool")
                                       (org-agent-test-unblock (cdr (assoc "content" m)))))
                      (cdr (assoc "messages" body))))))

(defun org-agent-shell-test--processes (marker)
  "The (PID . PGID) of the live processes whose command line has MARKER."
  (let (found)
    (dolist (dir (directory-files "/proc" t "\\`[0-9]+\\'"))
      (let ((cmdline (ignore-errors
                       (with-temp-buffer
                         (insert-file-contents-literally (expand-file-name "cmdline" dir))
                         (subst-char-in-string 0 ?\s (buffer-string)))))
            (stat (ignore-errors
                    (with-temp-buffer
                      (insert-file-contents-literally (expand-file-name "stat" dir))
                      (buffer-string)))))
        (when (and cmdline stat (string-search marker cmdline)
                   ;; Fields after the command's name: state, ppid, pgrp.
                   (string-match ") \\([A-Z]\\) [0-9]+ \\([0-9]+\\)" stat)
                   (not (equal (match-string 1 stat) "Z")))
          (push (cons (string-to-number (file-name-nondirectory dir))
                      (string-to-number (match-string 2 stat)))
                found))))
    found))

(defun org-agent-shell-test--group-alive-p (pgid)
  "Whether process group PGID has a process (`kill -0 -PGID')."
  (zerop (call-process "kill" nil nil nil "-0" "--" (format "-%d" pgid))))

(ert-deftest org-agent-shell-sees-the-notes-through-the-view ()
  "A command in the notes reads them as the notes layer shows them, in real Emacs.
The private subtree and the key never reach the model; a write into
the notes is denied by the kernel although the user approved it."
  (org-agent-shell-test--with-chat
    (let ((org-agent-directories (list root))
          (org-agent-shell-writable-directories nil))
      (with-temp-file (expand-file-name "health.org" root)
        (insert "* Appointments\nDentist\n* Results :private:\nVIEW-CANARY\n"
                "* Keys\nopenai sk-proj-Zq8xW2vR7tY5uI3oP1aS9dF6gH4jK0lM\n"))
      (org-agent-test-server-push :text "" :calls [("run_command" ((command . "grep -r -o . .")))])
      (org-agent-test-server-push :text "" :calls [("run_command" ((command . "touch planted.org")))])
      (org-agent-test-server-push :text "Done.")
      (org-agent-shell-test--send "Read everything.")
      (should (org-agent-test-wait (lambda () org-agent-chat--question) 60))
      (call-interactively (key-binding "y"))
      (should (org-agent-test-wait (lambda () finished) 60))
      (let* ((results (org-agent-shell-test--tool-messages))
             (all (mapconcat #'identity results "\n"))
             (joined (replace-regexp-in-string "\n\\(?:[^:\n]*:\\)?" "" all)))
        (should (string-search "Dentist" joined))
        (should (string-search "[a private subtree is left out]" joined))
        (should (string-search "no version-control history" all))
        (should-not (string-search "VIEW-CANARY" joined))
        (should-not (string-search "Zq8xW2vR7tY5" joined))
        (should (string-search "Permission denied" all)))
      (should-not (file-exists-p (expand-file-name "planted.org" root))))))

(ert-deftest org-agent-shell-unsandboxed-is-named-in-the-header ()
  "Turning the sandbox off is named in the chat's header line, and commands see all."
  (org-agent-shell-test--with-chat
    (should-not (string-search "unsandboxed" (org-agent-chat--header)))
    (let ((org-agent-directories (list root))
          (org-agent-shell-sandbox nil))
      (should (string-search "commands unsandboxed" (org-agent-chat--header)))
      (with-temp-file (expand-file-name "health.org" root)
        (insert "* Results :private:\nOPEN-CANARY\n"))
      (org-agent-test-server-push :text "" :calls [("run_command" ((command . "cat health.org")))])
      (org-agent-test-server-push :text "Done.")
      (org-agent-shell-test--send "Read it.")
      (should (org-agent-test-wait (lambda () finished) 60))
      ;; Without the sandbox a command reads the file as it is: the user's choice.
      (should (string-search "OPEN-CANARY"
                             (mapconcat #'identity (org-agent-shell-test--tool-messages) "\n"))))))

(ert-deftest org-agent-shell-asks-runs-and-denies ()
  "A read-only command runs at once; another asks and runs once approved; rm -rf is denied."
  (org-agent-shell-test--with-chat
    (org-agent-test-server-push :text "" :calls [("run_command" ((command . "ls -1")))])
    (org-agent-test-server-push :text "" :calls [("run_command" ((command . "touch made-by-agent.txt")))])
    (org-agent-test-server-push :text "" :calls [("run_command" ((command . "rm -rf ../x")))])
    (org-agent-test-server-push :text "Done.")
    (org-agent-shell-test--send "Look around and make a file.")
    ;; ls ran without a question; touch asks.
    (should (org-agent-test-wait (lambda () org-agent-chat--question) 60))
    (let ((text (buffer-string)))
      (should (string-match-p "^\\*\\* Tool: run_command (allow)" text))
      (should (string-match-p "^\\*\\* Approve\\? run_command\n- run_command: touch made-by-agent.txt: no rule allows it: it may change things\n- arguments: ={\"command\":\"touch made-by-agent.txt\"}=" text)))
    (should-not (file-exists-p (expand-file-name "made-by-agent.txt" root)))
    (call-interactively (key-binding "y"))
    (should (org-agent-test-wait (lambda () finished) 60))
    (should (equal (cadr finished) "Done."))
    (should (file-exists-p (expand-file-name "made-by-agent.txt" root)))
    (should (string-match-p "^\\*\\* Tool: run_command (ask: approved)" (buffer-string)))
    (should (string-match-p "^\\*\\* Tool: run_command (deny)" (buffer-string)))
    (let ((results (org-agent-shell-test--tool-messages)))
      (should (= (length results) 3))
      (should (string-match-p "\\`exit status 0\nstdout:\ninbox.org\\(\n\\|\\'\\)" (nth 0 results)))
      (should (string-match-p "\\`exit status 0\n(no output)" (nth 1 results)))
      (should (string-match-p "denied: run_command: rm -rf ../x: rm -r deletes whole directory trees"
                              (nth 2 results))))))

(ert-deftest org-agent-shell-an-interrupt-kills-the-process-group ()
  "Interrupting the turn kills the running command and what it started: its group is gone."
  (org-agent-shell-test--with-chat
    ;; xargs starts the sleep: a grandchild of the module, in the command's group.
    (org-agent-test-server-push :text "" :calls [("run_command" ((command . "echo 23.14069 | xargs sleep")))])
    (org-agent-test-server-push :text "Never asked for.")
    (org-agent-shell-test--send "Wait a while.")
    (should (org-agent-test-wait (lambda () org-agent-chat--question) 60))
    (call-interactively (key-binding "y"))
    (let ((sleep (car (org-agent-test-wait
                       (lambda () (org-agent-shell-test--processes "23.14069")) 30))))
      (should sleep)
      (should (org-agent-shell-test--group-alive-p (cdr sleep)))
      (should (org-agent-busy-p))
      (org-agent-interrupt)
      (should (org-agent-test-wait (lambda () finished) 10))
      (should (null (cadr finished)))
      (should (org-agent-test-wait
               (lambda () (not (org-agent-shell-test--group-alive-p (cdr sleep)))) 5))
      (should-not (org-agent-shell-test--processes "23.14069"))
      (should (string-match-p "Interrupted: you stopped this turn" (buffer-string)))
      ;; The next request was never made.
      (should (= (length (org-agent-test-server-requests)) 1)))))

(ert-deftest org-agent-shell-a-command-past-the-timeout-is-killed ()
  "A command that outlives `org-agent-shell-timeout' is killed; the model reads why."
  (org-agent-shell-test--with-chat
    (let ((org-agent-shell-timeout 1))
      ;; tail -f is read-only (it runs at once) and never ends by itself.
      (org-agent-test-server-push :text "" :calls [("run_command" ((command . "tail -f inbox.org")))])
      (org-agent-test-server-push :text "It was too slow.")
      (let ((start (float-time)))
        (org-agent-shell-test--send "Follow the inbox.")
        (should (org-agent-test-wait (lambda () finished) 60))
        (should (< (- (float-time) start) 20)))
      (should (equal (cadr finished) "It was too slow."))
      (let ((result (car (org-agent-shell-test--tool-messages))))
        (should (string-match-p "the command ran longer than 1 s and was killed" result))
        ;; What it printed before is kept.
        (should (string-match-p "Buy milk" result)))
      (should-not (org-agent-shell-test--processes "tail -f inbox.org")))))

(ert-deftest org-agent-shell-is-not-offered-unless-enabled ()
  "Without a rule naming it the tool is not offered, and a call of it is refused."
  (org-agent-shell-test--with-chat
    (let ((org-agent-permissions '((allow query_notes))))
      (org-agent-test-server-push :text "" :calls [("run_command" ((command . "touch x.txt")))])
      (org-agent-test-server-push :text "No shell.")
      (org-agent-shell-test--send "Make a file.")
      (should (org-agent-test-wait (lambda () finished) 60))
      (should-not (file-exists-p (expand-file-name "x.txt" root)))
      (let* ((first (car (org-agent-test-server-requests)))
             (tools (mapcar (lambda (tool) (cdr (assoc "name" (cdr (assoc "function" tool)))))
                            (cdr (assoc "tools" first)))))
        (should-not (member "run_command" tools)))
      (should (string-match-p "there is no tool named \"run_command\""
                              (car (org-agent-shell-test--tool-messages)))))))

(provide 'org-agent-shell-test)
;;; org-agent-shell-test.el ends here
