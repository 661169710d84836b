;;; org-agent-secrets-test.el --- Secret properties in real Emacs -*- lexical-binding: t; -*-

;;; Commentary:

;; `org-agent-secret-properties' reaches the module: the values of the
;; named properties are withheld from text sent to the LLM, and
;; customizing the option changes which.

;;; Code:

(require 'org-agent-test-setup)

(defconst org-agent-secrets-test--text
  "* Router
:PROPERTIES:
:PASSWORD: correct horse battery staple
:EFFORT:   0:30
:END:
Admin page.
"
  "A note with a password property.")

(ert-deftest org-agent-secret-properties-are-withheld ()
  "A :PASSWORD: value never reaches the LLM; the option names what is withheld."
  (org-agent-test-with-store
    (let ((out (org-agent--redact-private org-agent-secrets-test--text "/tmp/router.org")))
      (should (string-match-p ":PASSWORD: \\[withheld\\]" out))
      (should-not (string-match-p "correct horse" out))
      (should (string-match-p ":EFFORT:   0:30" out)))
    (let ((saved org-agent-secret-properties))
      (unwind-protect
          (progn
            (customize-set-variable 'org-agent-secret-properties '("effort"))
            (let ((out (org-agent--redact-private org-agent-secrets-test--text
                                                  "/tmp/router.org")))
              (should (string-match-p ":EFFORT: \\[withheld\\]" out))
              (should (string-match-p "correct horse" out))))
        (customize-set-variable 'org-agent-secret-properties saved)))))

(provide 'org-agent-secrets-test)
;;; org-agent-secrets-test.el ends here
