;;; org-agent-sexp-test.el --- S-expressions between the module and Emacs -*- lexical-binding: t; -*-

;;; Commentary:

;; The module's guarded reader and printer, seen from real Emacs: values
;; cross the module boundary as Lisp data, hostile text is refused with
;; a position, and nothing hostile can crash or hang Emacs.

;;; Code:

(require 'org-agent-test-setup)

(ert-deftest org-agent-sexp-read-gives-lisp-data ()
  "The guarded reader returns Lisp data, keywords lowercased."
  (should (equal (org-agent--read-sexp
                  "(:TYPE :event :Payload (:sensor :chat-message :text \"héllo\\n\") :n 1.5 :v [1 two \"3\"] :pair (a . b) :ok t :none nil)")
                 '(:type :event :payload (:sensor :chat-message :text "héllo\n")
                         :n 1.5 :v [1 two "3"] :pair (a . b) :ok t :none nil)))
  (should (equal (org-agent--read-sexp "?A") ?A))
  (should (equal (org-agent--read-sexp "1e3") 1000.0)))

(ert-deftest org-agent-sexp-hostile-text-is-refused ()
  "Reader macros, deep nesting and quote runs signal errors with a position."
  (dolist (text (list "#.(delete-file \"~/important\")"
                      "(:a #'car)"
                      (concat (make-string 9000 ?') "x")
                      (concat (make-string 100000 ?\() (make-string 100000 ?\)))
                      "(:a \"unterminated"
                      "(:a 1))"))
    (let ((err (should-error (org-agent--read-sexp text) :type 'org-agent-error)))
      (should (string-match-p "line [0-9]+, column [0-9]+" (cadr err))))))

(ert-deftest org-agent-sexp-long-lists-cross-safely ()
  "A list of 120,000 elements crosses both ways without overflowing a stack."
  (let ((big (org-agent--read-sexp (concat "(" (mapconcat #'number-to-string (number-sequence 1 120000) " ") ")"))))
    (should (= (length big) 120000))
    (should (= (car (last big)) 120000))
    (should (= (length (org-agent--print-sexp big)) (length (prin1-to-string big))))))

(ert-deftest org-agent-sexp-print-round-trips ()
  "What the module prints, Emacs reads back equal."
  (dolist (value (list '(:type :request :target :emacs :action :insert :text "a \"quoted\"\nline\ttab")
                       '(1 -2 3.5 (a . b) [x "y" [1 2]] nil t)
                       (list (intern "a b") (intern "1.5") (intern "") (intern "(x)"))
                       (list :weird (string 1 127 ?é #x1F389))
                       1.0e+INF))
    (should (equal (car (read-from-string (org-agent--print-sexp value))) value))))

(ert-deftest org-agent-sexp-refuses-what-is-not-data ()
  "Circular lists, non-data objects and too-deep values are errors, not hangs."
  (let ((circular (list 1 2 3)))
    (setcdr (last circular) circular)
    (should-error (org-agent--print-sexp circular) :type 'org-agent-error))
  (should-error (org-agent--print-sexp (list (current-buffer))) :type 'org-agent-error)
  (let ((deep nil))
    (dotimes (_ 100) (setq deep (list deep)))
    (should-error (org-agent--print-sexp deep) :type 'org-agent-error)))

(provide 'org-agent-sexp-test)
;;; org-agent-sexp-test.el ends here
