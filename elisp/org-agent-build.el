;;; org-agent-build.el --- Build and load the org-agent dynamic module -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The org-agent authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The core of org-agent is a Rust dynamic module, `org-agent-module'.
;; This file makes sure a module of the package's own version is
;; present (building it with cargo when it is missing or stale) and
;; loads it.  A module that is already loaded cannot be unloaded, so a
;; stale loaded module means Emacs must be restarted.

;;; Code:

(require 'org-agent-base)
(require 'compile)
(require 'seq)
(require 'subr-x)
(org-agent--declare-module-functions)

(defconst org-agent-version "0.1.0"
  "Version of the org-agent package; the module must report the same.")

;;;; Options

(defcustom org-agent-module-directory
  (locate-user-emacs-file "org-agent/module/")
  "Directory where the built `org-agent-module' is installed.
It is added to `load-path'."
  :type 'directory
  :group 'org-agent-module)

(defcustom org-agent-build-without-asking nil
  "When non-nil, build a missing or stale module without asking first."
  :type 'boolean
  :group 'org-agent-module)

(defcustom org-agent-cargo-program "cargo"
  "The cargo program used to build the module."
  :type 'string
  :group 'org-agent-module)

;;;; Where the module is

(defvar org-agent--source-directory
  (let ((here (file-name-directory (or load-file-name buffer-file-name default-directory))))
    (or (locate-dominating-file here "Cargo.toml") (expand-file-name ".." here)))
  "Root of the org-agent sources (where Cargo.toml is).")

(defun org-agent--module-file ()
  "Return the path of the installed module file."
  (expand-file-name (concat "org-agent-module" module-file-suffix)
                    org-agent-module-directory))

(defun org-agent--module-stamp-file ()
  "Return the file that records the installed module's version."
  (expand-file-name "org-agent-module.version" org-agent-module-directory))

(defun org-agent--installed-module-version ()
  "Return the version of the installed module, or nil if there is none."
  (let ((stamp (org-agent--module-stamp-file)))
    (when (and (file-exists-p (org-agent--module-file)) (file-readable-p stamp))
      (with-temp-buffer
        (insert-file-contents stamp)
        (string-trim (buffer-string))))))

;;;; Building

(defun org-agent--check-emacs ()
  "Signal a clear error when this Emacs cannot run org-agent."
  (when (version< emacs-version "28.1")
    (signal 'org-agent-module-error
            (list (format "org-agent needs Emacs 28.1 or newer; this is %s" emacs-version))))
  (unless module-file-suffix
    (signal 'org-agent-module-error
            (list "this Emacs was built without dynamic module support (configure --with-modules)"))))

(defun org-agent--cargo ()
  "Return the cargo executable, or signal a clear error."
  (or (executable-find org-agent-cargo-program)
      (signal 'org-agent-module-error
              (list (format "cannot build the module: `%s' not found; install Rust (rustup) or set `org-agent-cargo-program'"
                            org-agent-cargo-program)))))

(defun org-agent--target-directory ()
  "Return cargo's target directory for the sources (honouring CARGO_TARGET_DIR)."
  (let ((env (getenv "CARGO_TARGET_DIR")))
    (file-name-as-directory
     (if (and env (not (string-empty-p env)))
         (expand-file-name env org-agent--source-directory)
       (expand-file-name "target" org-agent--source-directory)))))

(defun org-agent--built-library ()
  "Return the library cargo built, in the release target directory."
  (let ((dir (expand-file-name "release/" (org-agent--target-directory))))
    (seq-find #'file-exists-p
              (mapcar (lambda (name) (expand-file-name name dir))
                      '("liborg_agent.so" "liborg_agent.dylib" "org_agent.dll")))))

(defun org-agent--install-built-module ()
  "Copy the freshly built library into `org-agent-module-directory'."
  (let ((lib (org-agent--built-library)))
    (unless lib
      (signal 'org-agent-module-error
              (list (format "cargo finished but no library is in %srelease/"
                            (org-agent--target-directory)))))
    (make-directory org-agent-module-directory t)
    ;; Copy to a temporary name and rename, so a crash never leaves half a module.
    (let ((tmp (concat (org-agent--module-file) ".tmp")))
      (copy-file lib tmp t)
      (rename-file tmp (org-agent--module-file) t))
    (with-temp-file (org-agent--module-stamp-file)
      (insert org-agent-version "\n"))))

(defun org-agent--build-command ()
  "Return the command line that builds the module."
  (list (org-agent--cargo) "build" "--release" "--jobs"
        (number-to-string (max 1 (min 2 (or (and (fboundp 'num-processors) (num-processors)) 1))))))

(defconst org-agent--build-buffer "*org-agent-build*"
  "The compilation buffer of an interactive module build.")

(defun org-agent-build-module-sync ()
  "Build and install the module synchronously; signal an error on failure."
  (let* ((default-directory org-agent--source-directory)
         (process-environment (cons "CARGO_TERM_COLOR=never" process-environment))
         (cmd (org-agent--build-command))
         (buf (get-buffer-create org-agent--build-buffer))
         (status (progn
                   (with-current-buffer buf (erase-buffer))
                   (message "org-agent: building the module with %s..." (string-join cmd " "))
                   (apply #'call-process (car cmd) nil buf nil (cdr cmd)))))
    (unless (eql status 0)
      (signal 'org-agent-module-error
              (list (format "cargo build failed (%s):\n%s" status
                            (with-current-buffer buf
                              (buffer-substring-no-properties
                               (max (point-min) (- (point-max) 3000)) (point-max)))))))
    (org-agent--install-built-module)))

(defvar org-agent--after-build-functions nil
  "Functions called with no argument once an interactive build loaded the module.")

(defun org-agent--build-running-p ()
  "Whether an interactive build of the module is running now."
  (let* ((buffer (get-buffer org-agent--build-buffer))
         (process (and buffer (get-buffer-process buffer))))
    (and process (process-live-p process))))

;;;###autoload
(defun org-agent-build-module ()
  "Build the org-agent module with cargo in a compilation buffer, then load it.
While a build runs, another is not started: it would only ask to kill
the first one."
  (interactive)
  (org-agent--check-emacs)
  (if (org-agent--build-running-p)
      (message "org-agent: the module is being built already; see buffer %s"
               org-agent--build-buffer)
    (org-agent--start-build)))

(defun org-agent--start-build ()
  "Start cargo in the build buffer; load the module when it has finished."
  (let ((default-directory org-agent--source-directory)
        (process-environment (cons "CARGO_TERM_COLOR=never" process-environment))
        (cmd (org-agent--build-command)))
    (let ((buf (compilation-start (mapconcat #'shell-quote-argument cmd " ")
                                  nil (lambda (_) org-agent--build-buffer))))
      (with-current-buffer buf
        (add-hook 'compilation-finish-functions #'org-agent--build-finished nil t)))))

(defun org-agent--build-finished (_buffer status)
  "Install and load the module when the build finished with STATUS \"finished\"."
  (if (not (string-prefix-p "finished" status))
      (message "org-agent: module build failed: %s" (string-trim status))
    (condition-case err
        (progn
          (org-agent--install-built-module)
          (org-agent--load-module)
          (message "org-agent: module %s built and loaded" org-agent-version)
          (run-hooks 'org-agent--after-build-functions))
      (error (message "org-agent: %s" (error-message-string err))))))

;;;; Loading

(defun org-agent--load-module ()
  "Load the installed module and check its version."
  (add-to-list 'load-path (directory-file-name org-agent-module-directory))
  (unless (featurep 'org-agent-module)
    (module-load (org-agent--module-file))
    (unless (featurep 'org-agent-module)
      (provide 'org-agent-module)))
  (let ((loaded (org-agent--version)))
    (unless (equal loaded org-agent-version)
      (signal 'org-agent-module-error
              (list (format "module %s is loaded but the package is %s: restart Emacs to use the new module"
                            loaded org-agent-version))))))

(defun org-agent-ensure-module ()
  "Make sure the module of this package's version is loaded.
Build it when it is missing or stale: synchronously in batch mode,
else after asking (see `org-agent-build-without-asking') in a
compilation buffer.  Return non-nil when the module is loaded now."
  (org-agent--check-emacs)
  (cond
   ((featurep 'org-agent-module)
    (org-agent--load-module)
    t)
   ((equal (org-agent--installed-module-version) org-agent-version)
    ;; In a checkout, a library cargo built after the installed one replaces it (same
    ;; version, newer code), so `scripts/run' and rebuilds by hand take effect.
    (let ((built (org-agent--built-library)))
      (when (and built (file-newer-than-file-p built (org-agent--module-file)))
        (org-agent--install-built-module)))
    (org-agent--load-module)
    t)
   (noninteractive
    (org-agent-build-module-sync)
    (org-agent--load-module)
    t)
   ;; A build is under way (started by `org-agent-mode', say): its end loads the module.
   ((org-agent--build-running-p) nil)
   ((or org-agent-build-without-asking
        (y-or-n-p (format "Org-agent needs its module %s (%s); build it with cargo now? "
                          org-agent-version
                          (if (org-agent--installed-module-version) "installed one is stale" "none installed"))))
    (org-agent--cargo)
    (org-agent-build-module)
    nil)
   (t (signal 'org-agent-module-error
              (list "the org-agent module is not built; run M-x org-agent-build-module")))))

(provide 'org-agent-build)
;;; org-agent-build.el ends here
