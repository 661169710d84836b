;;; org-agent-babel-test.el --- org-agent source blocks, answered for real -*- lexical-binding: t; -*-

;;; Commentary:

;; Real Emacs, Org Babel and the module against the scripted test
;; server: C-c C-c on an `org-agent' block returns at once with a line
;; saying the answer is coming, which the answer replaces; header
;; arguments choose the preset, backend and context (private parts
;; cut); an answer for a block run again meanwhile is dropped.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-babel)
(require 'org-agent-test-server)

(defmacro org-agent-babel-test--in-block (text &rest body)
  "Run BODY in an Org buffer holding TEXT, point in its first source block."
  (declare (indent 1) (debug t))
  `(let ((buffer (generate-new-buffer "babel-test"))
         (org-confirm-babel-evaluate nil))
     (unwind-protect
         (with-current-buffer buffer
           (insert ,text)
           (org-mode)
           (goto-char (point-min))
           (search-forward "#+begin_src")
           ,@body)
       (with-current-buffer buffer (set-buffer-modified-p nil))
       (kill-buffer buffer))))

(defun org-agent-babel-test--last-request ()
  "The body of the last request the test server received."
  (car (last (org-agent-test-server-requests))))

(defun org-agent-babel-test--user-text ()
  "The text of the last user message of the last request."
  (let ((users (seq-filter (lambda (m) (equal (alist-get "role" m nil nil #'equal) "user"))
                           (alist-get "messages" (org-agent-babel-test--last-request)
                                      nil nil #'equal))))
    (alist-get "content" (car (last users)) nil nil #'equal)))

(ert-deftest org-agent-babel-the-answer-replaces-the-waiting-line ()
  "The block returns at once; the answer lands in its results drawer."
  (org-agent-test-with-server ()
    (org-agent-babel-test--in-block
        "* Project\nOpen: BLOCK-NOTES-MARK\n** Diary :private:\nPRIVATE-MARK\n* Q\n#+begin_src org-agent :context buffer\nWhat is open?\n#+end_src\n"
      (org-agent-test-server-push :text "- the *router*\n- the cable" :drip_ms 20)
      (org-babel-execute-src-block)
      (should (string-match-p ":results:\norg-agent: the answer is coming ([0-9a-f]+)\n:end:"
                              (buffer-string)))
      (should (org-agent-test-wait
               (lambda () (string-search "- the cable" (buffer-string))) 30))
      (should (string-match-p "#\\+RESULTS:\n:results:\n- the \\*router\\*\n- the cable\n:end:"
                              (buffer-string)))
      (should-not (string-search "the answer is coming" (buffer-string)))
      (let ((sent (org-agent-babel-test--user-text)))
        (should (string-match-p "\\`What is open\\?" sent))
        (should (string-search "BLOCK-NOTES-MARK" sent))
        (should-not (string-search "PRIVATE-MARK" sent))))))

(ert-deftest org-agent-babel-header-arguments-choose-the-preset ()
  "`:preset' shapes the request; an unknown preset is an error before anything is sent."
  (org-agent-test-with-server
      ((org-agent-presets '(("small" :model "babel-small" :temperature 0.5))))
    (org-agent-babel-test--in-block
        "#+begin_src org-agent :preset small\nHi?\n#+end_src\n"
      (org-agent-test-server-push :text "Hello.")
      (org-babel-execute-src-block)
      (should (org-agent-test-wait (lambda () (string-search "Hello." (buffer-string))) 30))
      (let ((request (org-agent-babel-test--last-request)))
        (should (equal (alist-get "model" request nil nil #'equal) "babel-small"))
        (should (equal (alist-get "temperature" request nil nil #'equal) 0.5))))
    (org-agent-babel-test--in-block
        "#+begin_src org-agent :preset nosuch\nHi?\n#+end_src\n"
      (should-error (org-babel-execute-src-block) :type 'user-error))))

(ert-deftest org-agent-babel-a-block-run-again-takes-only-the-new-answer ()
  "Run twice while the first answer streams: only the second lands."
  (org-agent-test-with-server ()
    (org-agent-babel-test--in-block
        "#+begin_src org-agent\nSlow?\n#+end_src\n"
      (org-agent-test-server-push :tokens 20 :text "FIRST-ANSWER " :drip_ms 100)
      (org-babel-execute-src-block)
      ;; The first request is at the server (and streams for 2 s) before the second leaves.
      (should (org-agent-test-wait (lambda () (= 1 (length (org-agent-test-server-requests)))) 30))
      (org-agent-test-server-push :text "SECOND-ANSWER")
      (goto-char (point-min))
      (search-forward "#+begin_src")
      (org-babel-execute-src-block)
      (should (org-agent-test-wait (lambda () (string-search "SECOND-ANSWER" (buffer-string))) 30))
      ;; Give the first one time to end: it must not replace the second.
      (should (org-agent-test-wait (lambda () (= 0 (hash-table-count org-agent-babel--waiting))) 30))
      (should-not (string-search "FIRST-ANSWER" (buffer-string)))
      (should (string-search "SECOND-ANSWER" (buffer-string))))))

(ert-deftest org-agent-babel-headings-in-an-answer-stay-inside-the-drawer ()
  "An answer with heading lines and an :END: line keeps the drawer and the outline whole."
  (org-agent-test-with-server ()
    (org-agent-babel-test--in-block
        "* Q\n#+begin_src org-agent\nPlan?\n#+end_src\n* NEXT-SIBLING\n"
      (org-agent-test-server-push :text "* Steps\n** First   \nbuy a cable\n:END:\n*bold* stays")
      (org-babel-execute-src-block)
      (should (org-agent-test-wait (lambda () (string-search "buy a cable" (buffer-string))) 30))
      (should (string-search
               ":results:\n*Steps*\n*First*\nbuy a cable\n=:END:=\n*bold* stays\n:end:\n\n* NEXT-SIBLING"
               (buffer-string)))
      ;; Org sees the same outline as before: two headings, the drawer whole.
      (should (equal (org-map-entries (lambda () (org-get-heading t t t t)))
                     '("Q" "NEXT-SIBLING")))
      (goto-char (point-min))
      (search-forward ":results:")
      (should (eq (org-element-type (org-element-at-point)) 'drawer)))))

(provide 'org-agent-babel-test)
;;; org-agent-babel-test.el ends here
