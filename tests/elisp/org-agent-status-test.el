;;; org-agent-status-test.el --- What org-agent-status counts -*- lexical-binding: t; -*-

;;; Commentary:

;; Real Emacs, the real module and chat, against the scripted test
;; server: the backends' failed requests are counted in
;; `org-agent-status' whatever the error.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent-chat)
(require 'org-agent-test-server)

(defun org-agent-status-test--row (name)
  "The counters of the backend NAME in the module's telemetry, a plist."
  (cdr (assoc name (plist-get (org-agent--telemetry) :backends))))

(ert-deftest org-agent-status-counts-requests-refused-with-http-400 ()
  "Six requests answered with HTTP 400 are six failures of their backend."
  (org-agent-test-with-store
    (let* ((port (org-agent-test-start-server))
           (name (format "refusing-%d" port))
           (org-agent-backends `((:name ,name :url ,(format "http://127.0.0.1:%d/v1" port)
                                        :model "test" :key "sk-test")))
           (finished nil)
           (org-agent-turn-finished-functions (list (lambda (_c answer) (setq finished (list answer))))))
      (dotimes (_ 6)
        (org-agent-test-server-push :status 400 :message "bad request" :kind "invalid_request_error"))
      (org-agent-test-kill-chat)
      (with-current-buffer (org-agent-chat)
        ;; Each turn feeds the first error back to the model and fails on a later one; turns
        ;; go on until the server has refused six requests.
        (while (< (length (org-agent-test-server-requests)) 6)
          (setq finished nil)
          (goto-char (point-max))
          (insert "Hello?")
          (org-agent-chat-send)
          (should (org-agent-test-wait (lambda () finished) 30)))
        (should (string-search "HTTP 400" (buffer-string)))
        (set-buffer-modified-p nil)
        (kill-buffer))
      (let ((row (org-agent-status-test--row name))
            (sent (length (org-agent-test-server-requests))))
        (should row)
        (should (= (plist-get row :calls) sent))
        (should (>= (plist-get row :failures) 6)))
      (org-agent-status)
      (with-current-buffer "*org-agent-status*"
        (should (string-match-p (format "| %s +| +[0-9]+ | +\\([6-9]\\|[1-9][0-9]\\) |" name)
                                (buffer-string)))))))

(provide 'org-agent-status-test)
;;; org-agent-status-test.el ends here
