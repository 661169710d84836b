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

(defun org-agent-size-test--sent-texts ()
  "The text of every message of every request the server received, one string each."
  (mapcar (lambda (request)
            (mapconcat (lambda (m) (format "%s" (alist-get "content" m nil nil #'equal)))
                       (alist-get "messages" request nil nil #'equal) "\n"))
          (org-agent-test-server-requests)))

(ert-deftest org-agent-size-context-overflow-is-not-resent-and-does-not-poison-the-chat ()
  "A context-size 400 is not retried, and the next turn no longer carries the message."
  (let* ((port (org-agent-test-server-start (org-agent-test-server-binary org-agent-test-root)))
         (org-agent-backends `((:name "small" :url ,(format "http://127.0.0.1:%d/v1" port)
                                      :model "m")))
         (org-agent-tool-rounds 0))
    (unwind-protect
        (progn
          (org-agent-test-kill-chat)
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
      (org-agent-test-kill-chat)
      (org-agent-test-server-stop))))

(defun org-agent-size-test--last-user-text (request)
  "The text of the last user message of REQUEST (parsed JSON)."
  (let ((user (seq-filter (lambda (m) (equal (alist-get "role" m nil nil #'equal) "user"))
                          (alist-get "messages" request nil nil #'equal))))
    (format "%s" (alist-get "content" (car (last user)) nil nil #'equal))))

(defmacro org-agent-size-test--with-small-backend (&rest body)
  "Run BODY with a test server as the backend, its window 4096 tokens."
  (declare (indent 0) (debug t))
  `(let* ((port (org-agent-test-server-start (org-agent-test-server-binary org-agent-test-root)))
          (org-agent-backends `((:name "small" :url ,(format "http://127.0.0.1:%d/v1" port)
                                       :model "m" :context-window 4096)))
          (paste (concat "Please proofread this.\n\n"
                         (mapconcat (lambda (i) (format "Line %d of the long paste." i))
                                    (number-sequence 1 8000) "\n"))))
     (unwind-protect
         (progn (org-agent-test-kill-chat) ,@body)
       (org-agent-test-kill-chat)
       (org-agent-test-server-stop))))

(ert-deftest org-agent-size-an-oversized-message-is-not-sent-unasked ()
  "In batch, where nobody can choose, an oversized message is refused and nothing sent."
  (org-agent-size-test--with-small-backend
    (let ((org-agent-oversized-message 'ask))
      (with-current-buffer (org-agent-chat)
        (goto-char (point-max))
        (insert paste)
        (let ((err (should-error (org-agent-chat-send) :type 'user-error)))
          (should (string-match-p "Not sent: the message is about [0-9]+ tokens" (cadr err))))
        (should-not (org-agent-busy-p))
        (should (null (org-agent-test-server-requests)))))))

(ert-deftest org-agent-size-an-oversized-message-can-be-sent-trimmed ()
  "Trimmed, its beginning fits the window and says where it was cut."
  (org-agent-size-test--with-small-backend
    (let ((org-agent-oversized-message 'trim)
          (org-agent-tool-rounds 0))
      (org-agent-test-server-push :text "Proofread.")
      (org-agent-size-test--send paste 60)
      (let ((sent (org-agent-size-test--last-user-text (car (org-agent-test-server-requests)))))
        (should (string-prefix-p "Please proofread this." sent))
        (should (string-match-p "The message was cut here to fit" sent))
        (should (<= (string-bytes sent) (* 4096 2 1.1)))))))

(ert-deftest org-agent-size-an-oversized-message-can-be-read-in-pages-from-a-file ()
  "Set aside in a file, the model is told where, and read_file reads it in pages."
  (org-agent-size-test--with-small-backend
    (let ((org-agent-oversized-message 'file)
          (file nil))
      (cl-letf* ((orig (symbol-function 'org-agent-chat--set-aside))
                 ((symbol-function 'org-agent-chat--set-aside)
                  (lambda (text tokens)
                    (let ((r (funcall orig text tokens))) (setq file (cdr r)) r))))
        (org-agent-test-server-push :text "Got it.")
        (org-agent-size-test--send paste 60))
      (should (file-exists-p file))
      (should (equal (with-temp-buffer (insert-file-contents file) (buffer-string)) paste))
      (let ((first (org-agent-size-test--last-user-text (car (org-agent-test-server-requests)))))
        (should (string-search file first))
        (should (string-match-p "read it with read_file in pages" first))
        (should (< (string-bytes first) 4000)))
      ;; The model reads lines 4000-4002 of the file in the next turn.
      (org-agent-test-server-push
       :text "" :calls (vector (list "read_file" `((path . ,file) (offset . 4000) (limit . 3)))))
      (org-agent-test-server-push :text "It reads well.")
      (org-agent-size-test--send "Read lines 4000 to 4002." 60)
      (let* ((third (nth 2 (org-agent-test-server-requests)))
             (tool (seq-find (lambda (m) (equal (alist-get "role" m nil nil #'equal) "tool"))
                             (alist-get "messages" third nil nil #'equal))))
        (should tool)
        (should (string-search "Line 4000 of the long paste."
                               (format "%s" (alist-get "content" tool nil nil #'equal))))))))

(provide 'org-agent-size-test)
;;; org-agent-size-test.el ends here
