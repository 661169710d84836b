;;; org-agent-compact-test.el --- Long chats compacted into a summary you can edit -*- lexical-binding: t; -*-

;;; Commentary:

;; Real Emacs, the real module and chat, against the scripted test
;; server: `org-agent-chat-compact' has the older exchanges summarised
;; into a "* Summary :summary:" heading and the model then gets the
;; summary instead of them; an edited summary is what the model gets
;; next; a chat near its backend's window is compacted before the
;; message is sent; a resumed chat reads its summary back.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-chat)
(require 'org-agent-test-server)

(defun org-agent-compact-test--messages ()
  "The messages of the last request the server received, as one JSON string."
  (json-encode (alist-get "messages" (car (last (org-agent-test-server-requests))) nil nil #'equal)))

(defvar org-agent-compact-test--padding ""
  "Text each scripted answer ends with, to make the history long.")

(defmacro org-agent-compact-test--with-chat (&rest body)
  "Run BODY in a fresh chat against the test server, after three exchanges."
  (declare (indent 0) (debug t))
  `(org-agent-test-with-server ((org-agent-chat-compact-keep 1))
     (unwind-protect
         (progn
           (org-agent-test-kill-chat)
           (with-current-buffer (org-agent-chat)
             (dolist (n '("ONE" "TWO" "THREE"))
               (org-agent-test-server-push
                :text (format "Answer %s.%s" n org-agent-compact-test--padding))
               (funcall send (format "Question %s?" n))
               (should (org-agent-test-wait (lambda () finished) 30)))
             ,@body))
       (org-agent-interrupt)
       (org-agent-test-wait (lambda () (not (org-agent-busy-p))) 10))))

(ert-deftest org-agent-compact-now-replaces-older-exchanges-with-a-summary ()
  "The older exchanges become a summary heading; the model gets the summary next."
  (org-agent-compact-test--with-chat
    (org-agent-test-server-push :text "- We spoke of ONE and TWO.\n* not a heading")
    (org-agent-chat-compact)
    (should (org-agent-test-wait (lambda () (string-search "* Summary :summary:" (buffer-string))) 30))
    (let ((request-text (org-agent-compact-test--messages)))
      (should (string-search "Question ONE?" request-text))
      (should (string-search "Answer TWO." request-text))
      (should-not (string-search "Question THREE?" request-text)))
    ;; The older exchanges are gone from the buffer, the last one stays, Org stays Org.
    (should-not (string-search "Question ONE?" (buffer-string)))
    (should (string-search "* Summary :summary:\n- We spoke of ONE and TWO.\n" (buffer-string)))
    (should-not (string-search "\n* not a heading" (buffer-string)))
    (should (string-search "Question THREE?" (buffer-string)))
    ;; The next request has the summary, not what it replaced.
    (org-agent-test-server-push :text "Fine.")
    (funcall send "Question FOUR?")
    (should (org-agent-test-wait (lambda () finished) 30))
    (let ((sent (org-agent-compact-test--messages)))
      (should (string-search "We spoke of ONE and TWO." sent))
      (should (string-search "Question THREE?" sent))
      (should-not (string-search "Question ONE?" sent)))))

(ert-deftest org-agent-compact-an-edited-summary-is-what-the-model-gets ()
  "Editing the summary heading changes what the next request carries."
  (org-agent-compact-test--with-chat
    (org-agent-test-server-push :text "- SUMMARY-AS-WRITTEN")
    (org-agent-chat-compact)
    (should (org-agent-test-wait (lambda () (string-search "SUMMARY-AS-WRITTEN" (buffer-string))) 30))
    (save-excursion
      (goto-char (point-min))
      (search-forward "SUMMARY-AS-WRITTEN")
      (replace-match "SUMMARY-AS-EDITED"))
    (org-agent-test-server-push :text "Fine.")
    (funcall send "Question FOUR?")
    (should (org-agent-test-wait (lambda () finished) 30))
    (let ((sent (org-agent-compact-test--messages)))
      (should (string-search "SUMMARY-AS-EDITED" sent))
      (should-not (string-search "SUMMARY-AS-WRITTEN" sent)))))

(ert-deftest org-agent-compact-happens-before-a-send-near-the-window ()
  "A chat past `org-agent-chat-compact-at' of the window is summarised, then sent."
  ;; Three answers of about 2,500 tokens: 7,500 of history, over 0.6 of a 12,000 window.
  (let ((org-agent-compact-test--padding (concat "\n" (make-string 10000 ?x))))
    (org-agent-compact-test--with-chat
      (let* ((org-agent-backends (list (plist-put (copy-sequence (car org-agent-backends))
                                                  :context-window 12000)))
             (before (length (org-agent-test-server-requests))))
        (should (> (org-agent-chat--history-tokens) (* 0.6 12000)))
        (org-agent-test-server-push :text "- AUTO-SUMMARY")
        (org-agent-test-server-push :text "Answer FOUR.")
        (funcall send "Question FOUR?")
        (should (org-agent-test-wait (lambda () finished) 30))
        (let ((requests (nthcdr before (org-agent-test-server-requests))))
          (should (= (length requests) 2))
          ;; First the summary of the older exchanges, then the message with it.
          (should (string-search "BEGIN CONVERSATION" (json-encode (car requests))))
          (should (string-search "AUTO-SUMMARY" (json-encode (cadr requests))))
          (should (string-search "Question FOUR?" (json-encode (cadr requests)))))
        (should (string-search "* Summary :summary:\n- AUTO-SUMMARY" (buffer-string)))
        (should (string-search "Answer FOUR." (buffer-string)))
        (should (< (org-agent-chat--history-tokens) (* 0.6 12000)))))))

(ert-deftest org-agent-compact-a-saved-chat-reads-its-summary-back ()
  "The history of a chat file with a summary starts with the summary."
  (with-temp-buffer
    (insert "* Summary :summary:\n- SAVED-SUMMARY\n* You\nQuestion THREE?\n"
            "* Assistant\nAnswer THREE.\n* You\n")
    (org-mode)
    (should (equal (org-agent-chat--history)
                   (list (cons 'user (concat org-agent-chat--summary-preface
                                             "- SAVED-SUMMARY\n\nQuestion THREE?"))
                         (cons 'assistant "Answer THREE."))))))

(provide 'org-agent-compact-test)
;;; org-agent-compact-test.el ends here
