;;; org-agent-presets-test.el --- Presets and per-buffer backends, sent for real -*- lexical-binding: t; -*-

;;; Commentary:

;; Real Emacs, the real module and chat, against the scripted test
;; server: a preset chosen by "@NAME" in a message, by an Org property
;; or for a buffer changes what reaches the server (the model, the
;; system text, the temperature, the tools offered); a buffer's own
;; backend goes first; the menu's head says what the next turn uses.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-chat)
(require 'org-agent-presets)
(require 'org-agent-context)
(require 'org-agent-test-server)
(require 'cl-lib)

(defconst org-agent-presets-test-presets
  '(("terse" :system "Answer in one word, the PRESET-MARK way." :temperature 0.25
     :tool-rounds 0 :model "test-small")
    ("other" :backend "second" :model "test-other" :max-tokens 77))
  "The presets these tests define.")

(defun org-agent-presets-test--last-request ()
  "The body of the last request the test server received, an alist."
  (car (last (org-agent-test-server-requests))))

(defun org-agent-presets-test--system-text (request)
  "Every message text of REQUEST (a chat completions body) that is a system message."
  (mapconcat (lambda (m) (format "%s" (alist-get "content" m nil nil #'equal)))
             (seq-filter (lambda (m) (equal (alist-get "role" m nil nil #'equal) "system"))
                         (alist-get "messages" request nil nil #'equal))
             "\n"))

(defmacro org-agent-presets-test--with-chat (&rest body)
  "Run BODY in a fresh chat against the test server with the test presets.
`finished' and `send' are those of `org-agent-test-with-server'."
  (declare (indent 0) (debug t))
  `(org-agent-test-with-server
       ((org-agent-presets org-agent-presets-test-presets))
     (unwind-protect
         (progn
           (org-agent-test-kill-chat)
           (with-current-buffer (org-agent-chat)
             ,@body))
       (org-agent-interrupt)
       (org-agent-test-wait (lambda () (not (org-agent-busy-p))) 10))))

;;;; Choosing a preset

(ert-deftest org-agent-presets-at-name-is-taken-out-of-the-message ()
  "\"@NAME\" names a preset only when it is one and stands as a word."
  (let ((org-agent-presets org-agent-presets-test-presets))
    (should (equal (org-agent-presets-split-message "@terse what is due?")
                   '("terse" . "what is due?")))
    (should (equal (org-agent-presets-split-message "what is due? @terse")
                   '("terse" . "what is due?")))
    (should (equal (org-agent-presets-split-message "mail me@terse.org today")
                   '(nil . "mail me@terse.org today")))
    (should (equal (org-agent-presets-split-message "@nobody then @other now")
                   '("other" . "@nobody then  now")))
    (should (equal (org-agent-presets-split-message "no preset") '(nil . "no preset")))))

(ert-deftest org-agent-presets-the-most-specific-choice-wins ()
  "The message's preset beats the Org property, which beats the buffer's."
  (let ((org-agent-presets org-agent-presets-test-presets))
    (with-temp-buffer
      (insert "#+PROPERTY: ORG_AGENT_PRESET other\n* Project\n** Task\n")
      (org-mode)
      (goto-char (point-max))
      (should (equal (org-agent-presets-current) "other"))
      (setq org-agent-preset "terse")
      (should (equal (org-agent-presets-current) "other"))
      (goto-char (point-min))
      (re-search-forward "^\\* Project")
      (org-set-property "ORG_AGENT_PRESET" "terse")
      (re-search-forward "^\\*\\* Task")
      (should (equal (org-agent-presets-current) "terse"))
      (let ((org-agent-presets-message-preset "other"))
        (should (equal (org-agent-presets-current) "other"))))
    (with-temp-buffer
      (should (null (org-agent-presets-current)))
      (org-agent-preset-choose "terse")
      (should (equal (org-agent-presets-current) "terse"))
      (org-agent-preset-choose "")
      (should (null (org-agent-presets-current))))))

(ert-deftest org-agent-presets-mistakes-are-named ()
  "An unknown preset, or a preset with an unknown key, is an error that says so."
  (let ((org-agent-presets '(("typo" :temprature 1))))
    (should (string-match-p "No preset is named \"nope\""
                            (cadr (should-error (org-agent-presets-get "nope")
                                                :type 'user-error))))
    (should (string-match-p ":temprature"
                            (cadr (should-error (org-agent-presets-get "typo")
                                                :type 'user-error))))))

;;;; What reaches the server

(ert-deftest org-agent-presets-a-named-preset-shapes-the-request ()
  "@terse sends the preset's model, system text and temperature, and no tools."
  (org-agent-presets-test--with-chat
    (org-agent-test-server-push :text "Fine.")
    (funcall send "@terse How is the project?")
    (should (org-agent-test-wait (lambda () finished) 30))
    (let ((request (org-agent-presets-test--last-request)))
      (should (equal (alist-get "model" request nil nil #'equal) "test-small"))
      (should (equal (alist-get "temperature" request nil nil #'equal) 0.25))
      (should (string-match-p "PRESET-MARK" (org-agent-presets-test--system-text request)))
      (should-not (alist-get "tools" request nil nil #'equal))
      ;; The message goes without the preset's name.
      (should (string-match-p "\"How is the project\\?\""
                              (json-encode (alist-get "messages" request nil nil #'equal))))
      (should-not (string-match-p "@terse"
                                  (json-encode (alist-get "messages" request nil nil #'equal)))))
    ;; Without it, the next turn is the plain one again.
    (org-agent-test-server-push :text "Plain.")
    (funcall send "And now?")
    (should (org-agent-test-wait (lambda () finished) 30))
    (let ((request (org-agent-presets-test--last-request)))
      (should (equal (alist-get "model" request nil nil #'equal) "test"))
      (should-not (string-match-p "PRESET-MARK" (org-agent-presets-test--system-text request)))
      (should (alist-get "tools" request nil nil #'equal)))))

(ert-deftest org-agent-presets-the-chat-keeps-its-preset ()
  "A preset chosen for the chat applies to each of its turns."
  (org-agent-presets-test--with-chat
    (org-agent-preset-choose "terse")
    (org-agent-test-server-push :text "One.")
    (funcall send "First?")
    (should (org-agent-test-wait (lambda () finished) 30))
    (should (equal (alist-get "model" (org-agent-presets-test--last-request) nil nil #'equal)
                   "test-small"))))

(ert-deftest org-agent-presets-a-buffer-backend-goes-first ()
  "The preset's backend is tried first, with its model and answer length."
  (org-agent-presets-test--with-chat
    (let* ((first (car org-agent-backends))
           (org-agent-backends
            (list (plist-put (copy-sequence first) :model "unused-first")
                  (plist-put (plist-put (copy-sequence first) :name "second")
                             :model "second-own"))))
      (org-agent-preset-choose "other")
      (let ((cascade (org-agent-backends-cascade)))
        (should (equal (mapcar (lambda (b) (plist-get b :name)) cascade) '("second" "test")))
        (should (equal (plist-get (car cascade) :model) "test-other"))
        (should (equal (plist-get (car cascade) :max-tokens) 77))
        (should (equal (plist-get (cadr cascade) :model) "unused-first")))
      ;; The buffer's own model beats the preset's.
      (setq-local org-agent-buffer-model "buffer-model")
      (should (equal (plist-get (car (org-agent-backends-cascade)) :model) "buffer-model"))
      (org-agent-test-server-push :text "From the second.")
      (funcall send "Who answers?")
      (should (org-agent-test-wait (lambda () finished) 30))
      (let ((request (org-agent-presets-test--last-request)))
        (should (equal (alist-get "model" request nil nil #'equal) "buffer-model"))
        (should (equal (or (alist-get "max_tokens" request nil nil #'equal)
                           (alist-get "max_completion_tokens" request nil nil #'equal))
                       77)))
      ;; A backend that is not configured is named, not skipped.
      (setq-local org-agent-buffer-backend "missing")
      (should (string-match-p "\"missing\""
                              (cadr (should-error (org-agent-backends-cascade)
                                                  :type 'user-error)))))))

(ert-deftest org-agent-presets-and-context-work-in-a-resumed-chat ()
  "A chat continued from its file takes @NAME, a chosen preset and added context."
  (org-agent-test-with-server
      ((org-agent-presets org-agent-presets-test-presets)
       (org-agent-context-items nil))
    (let ((file (expand-file-name "presets-resumed.org" (org-agent-chat--directory))))
      (make-directory (file-name-directory file) t)
      (with-temp-file file
        (insert "#+TITLE: org-agent chat\n#+CONVERSATION: presets-resumed\n\n"
                "* You\nWhere is the router?\n* Assistant\nIn the hall.\n* You\n"))
      (org-agent-test-kill-chat)
      (cl-letf (((symbol-function 'completing-read)
                 (lambda (_prompt table &rest _)
                   (car (seq-find (lambda (c) (string-match-p "Where is the router" (car c)))
                                  table)))))
        (with-current-buffer (org-agent-chat '(4))
          (unwind-protect
              (progn
                (should (equal org-agent-chat--conversation "presets-resumed"))
                (with-temp-buffer
                  (insert "RESUMED-CONTEXT-MARK")
                  (org-agent-context-add)
                  (with-current-buffer (org-agent-chat)
                    (org-agent-test-server-push :text "Still there.")
                    (funcall send "@terse And the cable?")
                    (should (org-agent-test-wait (lambda () finished) 30))))
                (let ((request (org-agent-presets-test--last-request)))
                  (should (equal (alist-get "model" request nil nil #'equal) "test-small"))
                  (should (string-match-p "PRESET-MARK"
                                          (org-agent-presets-test--system-text request)))
                  (should (string-match-p "RESUMED-CONTEXT-MARK"
                                          (org-agent-presets-test--system-text request)))
                  ;; The earlier turns went too: the conversation was resumed, not begun.
                  (should (string-match-p "In the hall"
                                          (json-encode (alist-get "messages" request
                                                                  nil nil #'equal)))))
                (should (string-match-p "preset none" (org-agent-presets-describe)))
                (org-agent-preset-choose "terse")
                (should (string-match-p "preset terse" (org-agent-presets-describe))))
            (org-agent-context-clear)
            (set-buffer-modified-p nil)
            (kill-buffer)))))))

(provide 'org-agent-presets-test)
;;; org-agent-presets-test.el ends here
