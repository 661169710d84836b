;;; org-agent-size-test.el --- Conversations survive a message too large for the model -*- lexical-binding: t; -*-

;;; Commentary:

;; A 200 KB paste once failed with HTTP 400 "exceeds the available
;; context size", was sent again twice unchanged, and failed every
;; later turn of that chat the same way.  Against the test server,
;; which answers in llama.cpp's own words.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-chat)
(require 'org-agent-test-server)

(defun org-agent-size-test--send (text seconds)
  "Send TEXT in the chat; wait up to SECONDS for the turn to end; return the buffer text."
  (let* ((finished nil)
         (org-agent-turn-finished-functions (list (lambda (_c _a) (setq finished t)))))
    (with-current-buffer (org-agent-chat)
      (goto-char (point-max))
      (insert text)
      (org-agent-chat-send)
      (should (org-agent-test-wait (lambda () finished) seconds))
      (buffer-string))))

(defun org-agent-size-test--fresh-chat ()
  "Kill the chat buffer, so the next `org-agent-chat' starts a new conversation."
  (when (get-buffer org-agent-chat-buffer-name)
    (with-current-buffer org-agent-chat-buffer-name (set-buffer-modified-p nil))
    (kill-buffer org-agent-chat-buffer-name)))

(defun org-agent-size-test--sent-texts ()
  "The text of every message of every request the server received, one string each."
  (mapcar (lambda (request)
            (mapconcat (lambda (m) (format "%s" (alist-get "content" m nil nil #'equal)))
                       (alist-get "messages" request nil nil #'equal) "\n"))
          (org-agent-test-server-requests)))

(ert-deftest org-agent-size-context-overflow-is-not-resent-and-does-not-poison-the-chat ()
  "A context-size 400 is not retried, and the next turn no longer carries the message."
  (let* ((port (org-agent-test-server-start (org-agent-test-server-binary org-agent-test-root t)))
         (org-agent-backends `((:name "small" :url ,(format "http://127.0.0.1:%d/v1" port)
                                      :model "m")))
         (org-agent-tool-rounds 0))
    (unwind-protect
        (progn
          (org-agent-size-test--fresh-chat)
          (org-agent-test-server-push
           :status 400
           :message "the request exceeds the available context size, try increasing it")
          (org-agent-test-server-push :text "Still here.")
          (let ((text (org-agent-size-test--send "BIGPASTE BIGPASTE BIGPASTE" 60)))
            (should (string-match-p "context size" text)))
          ;; Sent once: neither retried nor told to the model.
          (should (= 1 (length (org-agent-test-server-requests))))
          (let ((text (org-agent-size-test--send "And now a small question?" 60)))
            (should (string-search "Still here." text)))
          (let ((sent (org-agent-size-test--sent-texts)))
            (should (= 2 (length sent)))
            (should (string-search "small question" (nth 1 sent)))
            (should-not (string-search "BIGPASTE" (nth 1 sent)))))
      (org-agent-size-test--fresh-chat)
      (org-agent-test-server-stop))))

(ert-deftest org-agent-size-a-message-larger-than-the-window-is-not-sent ()
  "With the backend's :context-window known, an oversized request is refused before sending."
  (let* ((port (org-agent-test-server-start (org-agent-test-server-binary org-agent-test-root t)))
         (org-agent-backends `((:name "small" :url ,(format "http://127.0.0.1:%d/v1" port)
                                      :model "m" :context-window 4096)))
         (org-agent-tool-rounds 0)
         (paste (mapconcat #'identity (make-list 20000 "lorem ipsum") " ")))
    (unwind-protect
        (progn
          (org-agent-size-test--fresh-chat)
          (let ((text (org-agent-size-test--send paste 60)))
            (should (string-match-p "context window of this backend; nothing was sent" text)))
          (should (null (org-agent-test-server-requests)))
          (org-agent-test-server-push :text "Small answer.")
          (let ((text (org-agent-size-test--send "Hello?" 60)))
            (should (string-search "Small answer." text)))
          (should (= 1 (length (org-agent-test-server-requests)))))
      (org-agent-size-test--fresh-chat)
      (org-agent-test-server-stop))))

(provide 'org-agent-size-test)
;;; org-agent-size-test.el ends here
