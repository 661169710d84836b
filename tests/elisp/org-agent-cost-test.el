;;; org-agent-cost-test.el --- What a turn costs, in the chat and the status -*- lexical-binding: t; -*-

;;; Commentary:

;; Real Emacs, the real module and chat, against the scripted test
;; server speaking Anthropic's format (which counts 12 prompt and 7
;; answer tokens): the header line shows the last turn's tokens and cost
;; and the conversation's, priced by `org-agent-prices'; the status shows
;; the conversation's and today's cost from the budget's ledger.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-chat)
(require 'org-agent-test-server)

(defun org-agent-cost-test--backends (port)
  "The test server on PORT as an Anthropic backend serving the model \"test\"."
  `((:name "priced" :type anthropic :url ,(format "http://127.0.0.1:%d/v1" port)
           :model "test" :key "sk-test")))

(defmacro org-agent-cost-test--chat (prices &rest body)
  "Run BODY in a fresh chat against the test server, priced by PRICES.
PRICES is the value of `org-agent-prices'.  `send' sends its argument and
waits for the turn to end."
  (declare (indent 1) (debug t))
  `(org-agent-test-with-store
     (let* ((port (org-agent-test-start-server))
            (org-agent-backends (org-agent-cost-test--backends port))
            (org-agent-prices ,prices)
            (finished nil)
            (org-agent-turn-finished-functions
             (list (lambda (_conv answer) (setq finished (list answer)))))
            (send (lambda (text)
                    (org-agent-test-server-push :wire "anthropic" :text "Fine.")
                    (setq finished nil)
                    (goto-char (point-max))
                    (insert text)
                    (org-agent-chat-send)
                    (should (org-agent-test-wait (lambda () finished) 30))
                    (should (equal (car finished) "Fine.")))))
       (org-agent-test-kill-chat)
       (with-current-buffer (org-agent-chat)
         (unwind-protect
             (progn ,@body)
           (set-buffer-modified-p nil)
           (kill-buffer))))))

(ert-deftest org-agent-cost-the-header-shows-the-turn-and-the-conversation ()
  "After each turn the header shows its tokens and cost, and the conversation's."
  (org-agent-cost-test--chat '(("test" 1000 2000))
    (funcall send "Hello?")
    ;; 12 prompt tokens at 1000 and 7 answer tokens at 2000 per million: $0.026.
    (should (string-search "19 tok $0.026 · conv 19 tok $0.026" (org-agent-chat--header)))
    (funcall send "Again?")
    (should (string-search "19 tok $0.026 · conv 38 tok $0.052" (org-agent-chat--header)))
    (let ((spent (org-agent-chat-spent (current-buffer))))
      (should (= (plist-get spent :tokens) 38))
      (should (< (abs (- (plist-get spent :cost) 0.052)) 1e-9))
      (should-not (plist-get spent :unknown)))
    ;; The status: this conversation, and today's spending from the budget's ledger
    ;; (the store is fresh, so these two turns are all of today).
    (let ((org-agent-chat-buffer-name (buffer-name)))
      (org-agent-status))
    (with-current-buffer "*org-agent-status*"
      (should (string-search "- this conversation :: 38 tokens, $0.052" (buffer-string)))
      (should (string-match-p "- today ([0-9-]+ UTC) :: 38 tokens, \\$0\\.052$"
                              (buffer-string))))))

(ert-deftest org-agent-cost-a-continued-conversation-goes-on-counting ()
  "The saved chat keeps its usage; continued from the file, the counts go on."
  (org-agent-cost-test--chat '(("test" 1000 2000))
    (funcall send "Hello?")
    (funcall send "Again?")
    (let ((file (expand-file-name (concat org-agent-chat--conversation ".org")
                                  (org-agent-chat--directory))))
      (with-temp-buffer
        (insert-file-contents file)
        (should (string-match-p "^#\\+CONVERSATION: .*\n#\\+USAGE: 38 tokens, \\$0\\.052"
                                (buffer-string))))
      (should-not (string-search "#+USAGE" (buffer-string)))
      (let ((continued (org-agent-chat--continue file)))
        (unwind-protect
            (with-current-buffer continued
              (should-not (string-search "#+USAGE" (buffer-string)))
              (should (string-search "conv 38 tok $0.052" (org-agent-chat--header)))
              (funcall send "Once more?")
              (should (string-search "19 tok $0.026 · conv 57 tok $0.078"
                                     (org-agent-chat--header))))
          (with-current-buffer continued (set-buffer-modified-p nil))
          (kill-buffer continued))))))

(ert-deftest org-agent-cost-a-server-on-this-machine-costs-nothing ()
  "Without a price of its own, a model served on this machine is free."
  (org-agent-cost-test--chat nil
    (funcall send "Hello?")
    (should (string-search "19 tok $0 · conv 19 tok $0" (org-agent-chat--header)))))

(ert-deftest org-agent-cost-formats-are-short-and-say-what-is-unknown ()
  "Costs and token counts are short; an unknown price is \"?\", never 0."
  (should (equal (org-agent-chat-format-cost 0.0042) "$0.0042"))
  (should (equal (org-agent-chat-format-cost 0.031) "$0.031"))
  (should (equal (org-agent-chat-format-cost 12.5) "$12.50"))
  (should (equal (org-agent-chat-format-cost 0) "$0"))
  (should (equal (org-agent-chat-format-cost 0 t) "$?"))
  (should (equal (org-agent-chat-format-cost 0.5 t) "$0.5+?"))
  (should (equal (org-agent-chat-format-tokens 850) "850"))
  (should (equal (org-agent-chat-format-tokens 1234 t) "~1.2k"))
  (should (equal (org-agent-chat-format-tokens 3400000) "3.4M")))

(provide 'org-agent-cost-test)
;;; org-agent-cost-test.el ends here
