;;; org-agent-menu-test.el --- The menu offers every command and says what a turn uses -*- lexical-binding: t; -*-

;;; Commentary:

;; Real Emacs with the real module: every key of `org-agent-menu' runs
;; an interactive command of the package; its head names the preset,
;; backend and model the next turn from this buffer uses and where the
;; answer goes; the place cycles per buffer; the menu opens in a buffer
;; and its keys reach the buffer it was opened from.

;;; Code:

(require 'org-agent-test-setup)
(require 'org-agent)
(require 'org-agent-menu)
(require 'cl-lib)

(defun org-agent-menu-test--suffix-commands ()
  "Every command bound in `org-agent-menu', as (KEY . COMMAND)."
  (let (found)
    (cl-labels ((walk (node)
                  (cond
                   ((and (vectorp node) (> (length node) 0))
                    (mapc #'walk (append node nil)))
                   ((and (consp node) (integerp (car node)) (symbolp (cadr node))
                         (listp (nth 2 node)) (plist-get (nth 2 node) :command))
                    (push (cons (plist-get (nth 2 node) :key)
                                (plist-get (nth 2 node) :command))
                          found))
                   ((consp node) (mapc #'walk node)))))
      (walk (get 'org-agent-menu 'transient--layout)))
    found))

(ert-deftest org-agent-menu-every-key-is-a-command-of-the-package ()
  "Each key runs an interactive org-agent command that exists."
  (let ((suffixes (org-agent-menu-test--suffix-commands)))
    (should (> (length suffixes) 20))
    (dolist (wanted '(org-agent-here-ask org-agent-here-rewrite org-agent-chat
                      org-agent-new-chat org-agent-preset-choose org-agent-context-add
                      org-agent-context org-agent-scan org-agent-approvals org-agent-status
                      org-agent-skills org-agent-menu-set-backend org-agent-menu-set-model
                      org-agent-mcp org-agent-mcp-server-mode))
      (should (rassq wanted suffixes)))
    (dolist (suffix suffixes)
      (should (string-prefix-p "org-agent-" (symbol-name (cdr suffix))))
      (should (commandp (cdr suffix))))
    ;; No key is bound twice.
    (should (= (length suffixes)
               (length (delete-dups (mapcar #'car suffixes)))))))

(ert-deftest org-agent-menu-the-head-says-what-the-next-turn-uses ()
  "The head names the preset, backend, model, focus and where answers go."
  (let ((org-agent-presets '(("terse" :backend "b2" :model "m-terse")))
        (org-agent-backends '((:name "b1" :url "http://127.0.0.1:1/v1" :model "m1")
                              (:name "b2" :url "http://127.0.0.1:2/v1" :model "m2"))))
    (with-temp-buffer
      (insert "* Project\n** Task one\n")
      (org-mode)
      (should (string-match-p "preset none · backend the cascade's first"
                              (org-agent-menu--head)))
      (should (string-match-p "heading \"Task one\"" (org-agent-menu--head)))
      (should (string-match-p "answers go: under the heading at point"
                              (org-agent-menu--head)))
      (org-agent-preset-choose "terse")
      (should (string-match-p "preset terse · backend b2 · model m-terse"
                              (org-agent-menu--head)))
      (org-agent-menu-set-model "mine")
      (should (string-match-p "model mine" (org-agent-menu--head)))
      (org-agent-menu-cycle-place)
      (should (string-match-p "answers go: at point" (org-agent-menu--head)))
      (org-agent-menu-cycle-place)
      (should (string-match-p "answers go: in the chat" (org-agent-menu--head)))
      ;; Only here: another buffer keeps the default.
      (with-temp-buffer
        (should (string-match-p "answers go: at point" (org-agent-menu--head)))
        (should (string-match-p "preset none" (org-agent-menu--head)))))))

(ert-deftest org-agent-menu-its-keys-act-on-the-buffer-it-was-opened-from ()
  "Opening the menu and pressing p then a preset sets that buffer's preset."
  (let ((org-agent-presets '(("terse" :temperature 0)))
        (buffer (generate-new-buffer "menu-target")))
    (unwind-protect
        (progn
          (switch-to-buffer buffer)
          ;; Through the command loop, as typed: the menu, p, the preset, and q to leave.
          (execute-kbd-macro (kbd "M-x org-agent-menu RET p terse RET C-g"))
          (should (equal (buffer-local-value 'org-agent-preset buffer) "terse"))
          (should-not (buffer-local-value 'org-agent-preset (get-buffer "*Messages*"))))
      (kill-buffer buffer))))

(provide 'org-agent-menu-test)
;;; org-agent-menu-test.el ends here
