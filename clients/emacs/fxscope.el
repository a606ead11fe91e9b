;;; fxscope.el --- Eglot and flymake for fxscope -*- lexical-binding: t; -*-

;; Version: 0.1
;; Package-Requires: ((emacs "27.1"))
;; Keywords: languages, tools

;; This file is not part of GNU Emacs.
;; SPDX-License-Identifier: Apache-2.0

;;; Commentary:

;; fxscope shows which lines of PyTorch model code `torch.fx' cannot
;; trace, why, and how to fix them.  Two ways to use it from Emacs:
;;
;; 1. As eglot's language server for Python buffers (diagnostics while
;;    you type, hovers with the graph nodes of a line, code actions):
;;
;;      (require 'fxscope)
;;      (fxscope-eglot-setup)
;;      (add-hook 'python-mode-hook #'eglot-ensure)
;;
;;    eglot runs one server per buffer, so this replaces pylsp or
;;    pyright for Python.
;;
;; 2. Next to another server you keep in eglot (or with no server at
;;    all), as a flymake backend that runs
;;    `fxscope check --daemon --format json' when the file is saved:
;;
;;      (require 'fxscope)
;;      (add-hook 'python-mode-hook #'fxscope-flymake-mode)
;;
;;    The warm daemon answers unchanged targets from its cache, so a
;;    save re-traces only what changed.  It checks the file as saved.
;;
;; fxscope imports and runs the workspace's model code (in isolated
;; worker processes): use it only in projects you trust.

;;; Code:

(require 'cl-lib)
(require 'flymake)
(require 'json)
(require 'seq)
(require 'subr-x)

(defvar eglot-server-programs)

(defgroup fxscope nil
  "Show which lines of PyTorch model code torch.fx cannot trace."
  :group 'tools
  :prefix "fxscope-")

(defcustom fxscope-program "fxscope"
  "The fxscope executable: a virtualenv's bin/fxscope, or a name on PATH."
  :type 'string)

(defcustom fxscope-server-args '("serve")
  "Arguments that start the language server over stdio."
  :type '(repeat string))

(defcustom fxscope-initialization-options
  '(:fxscope (:enable t :traceOn "type"))
  "LSP initializationOptions that eglot sends, as a JSON-like plist.
Keys: enable, traceOn (\"type\" or \"save\"), debounce (ms), workers,
timeout (s), codeLens, inlayHints.  Tracing settings left out default
to the workspace's [tool.fxscope] table in pyproject.toml."
  :type 'sexp)

(defcustom fxscope-python-modes '(python-mode python-ts-mode)
  "Major modes that fxscope serves."
  :type '(repeat symbol))

(defcustom fxscope-check-args '("--daemon")
  "Extra arguments of `fxscope check' for the flymake backend.
The default asks the warm background daemon, which keeps torch imported
and its results cached between saves; without \"--daemon\" every check
is a fresh process."
  :type '(repeat string))

(defcustom fxscope-root-markers '("pyproject.toml" ".git")
  "Files that mark the workspace root, tried in order."
  :type '(repeat string))

(defcustom fxscope-flymake-show-hints t
  "Non-nil appends each finding's fix hint to its flymake message."
  :type 'boolean)

;;;; eglot

(defun fxscope-eglot-contact (&optional _interactive)
  "Return the eglot contact of `fxscope serve'."
  (append (cons fxscope-program fxscope-server-args)
          (when fxscope-initialization-options
            (list :initializationOptions fxscope-initialization-options))))

;;;###autoload
(defun fxscope-project-try-pyproject (dir)
  "Return a project rooted at the nearest pyproject.toml above DIR, or nil.
`fxscope-eglot-setup' adds it to `project-find-functions' after the
version control backend: it gives eglot the workspace root of a Python
project that is not in a repository, where the file's own directory
would otherwise become the root and its imports would fail."
  (let ((root (locate-dominating-file dir "pyproject.toml")))
    (and root (cons 'transient (file-name-as-directory
                                (expand-file-name root))))))

;;;###autoload
(defun fxscope-eglot-setup ()
  "Make fxscope eglot's language server for `fxscope-python-modes'.
The entry goes in front of `eglot-server-programs', so \\[eglot] and
`eglot-ensure' start fxscope in Python buffers."
  (with-eval-after-load 'project
    (add-hook 'project-find-functions #'fxscope-project-try-pyproject 90))
  (with-eval-after-load 'eglot
    (setq eglot-server-programs
          (cons (cons fxscope-python-modes #'fxscope-eglot-contact)
                (seq-remove (lambda (entry)
                              (eq (cdr-safe entry) #'fxscope-eglot-contact))
                            eglot-server-programs)))))

;;;; flymake

(defvar-local fxscope--flymake-process nil
  "The buffer's running `fxscope check' process, if any.")

(defun fxscope--root (file)
  "The workspace root of FILE.
That is the nearest directory holding one of `fxscope-root-markers'."
  (or (seq-some (lambda (marker) (locate-dominating-file file marker))
                fxscope-root-markers)
      (file-name-directory file)))

(defun fxscope--json-parse (text)
  "TEXT parsed as JSON: objects as hash tables, arrays as lists."
  (if (fboundp 'json-parse-string)
      (json-parse-string text :object-type 'hash-table :array-type 'list
                         :null-object nil :false-object nil)
    (let ((json-object-type 'hash-table)
          (json-array-type 'list)
          (json-key-type 'string))
      (json-read-from-string text))))

(defun fxscope--position (line column)
  "Buffer position of 1-based LINE and 1-based code point COLUMN.
A column past the end of the line gives the line's end."
  (save-excursion
    (goto-char (point-min))
    (forward-line (1- line))
    (if column
        (min (+ (point) (1- column)) (line-end-position))
      (point))))

(defun fxscope--finding-location (finding root file)
  "Return FINDING's span in FILE: (LINE COLUMN END-LINE END-COLUMN), or nil.
A finding inside the workspace is matched by its path relative to ROOT;
one inside a library shows at its anchor, the innermost workspace line
on the way there."
  (let ((here (file-truename file)))
    (cl-flet ((same (path)
                (and path (string= (file-truename (expand-file-name path root))
                                   here)))
              (span (loc)
                (list (gethash "line" loc) (gethash "column" loc)
                      (gethash "end_line" loc) (gethash "end_column" loc))))
      (let ((anchor (gethash "anchor" finding)))
        (cond ((same (gethash "file" finding)) (span finding))
              ((and anchor (same (gethash "file" anchor))) (span anchor)))))))

(defun fxscope--severity (severity)
  "The flymake diagnostic type of a report SEVERITY."
  (pcase severity
    ("error" :error)
    ("warning" :warning)
    (_ :note)))

(defun fxscope--message (finding)
  "The flymake message of FINDING: its code, message and maybe hint."
  (let ((hint (gethash "hint" finding)))
    (concat (gethash "code" finding) " " (gethash "message" finding)
            (when (and fxscope-flymake-show-hints hint
                       (not (string-empty-p hint)))
              (concat " [hint: " hint "]")))))

(defun fxscope-flymake-diagnostics (report buffer)
  "Flymake diagnostics of BUFFER's file from REPORT, a parsed report."
  (with-current-buffer buffer
    (let ((root (gethash "root" report))
          (file (buffer-file-name buffer))
          (diags nil))
      (dolist (finding (gethash "findings" report))
        (pcase (fxscope--finding-location finding root file)
          (`(,line ,col ,end-line ,end-col)
           (let* ((beg (fxscope--position line col))
                  (end (if end-col
                           (fxscope--position (or end-line line) end-col)
                         (save-excursion (goto-char beg)
                                         (line-end-position)))))
             (when (<= end beg)
               (setq end (save-excursion (goto-char beg)
                                         (line-end-position))))
             (when (<= end beg)
               (setq beg (max (point-min) (1- beg))
                     end (min (point-max) (1+ end))))
             (push (flymake-make-diagnostic
                    buffer beg end
                    (fxscope--severity (gethash "severity" finding))
                    (fxscope--message finding))
                   diags)))))
      (nreverse diags))))

;; The report describes the file on disk, so a check runs only when the
;; file was saved since the last one; between saves flymake keeps the
;; diagnostics it has (their overlays follow the edits).  A check that is
;; running when flymake asks again is not killed (that could interrupt
;; the daemon's start-up); it reports to the newest callback, and runs
;; again if the file was saved after it started.

(defvar-local fxscope--flymake-report-fn nil
  "Flymake's callback of the buffer's latest run.")

(defvar-local fxscope--flymake-checked-modtime nil
  "The modification time of the file that the last finished check saw.")

(defun fxscope--flymake-report (proc source stderr)
  "Report the finished check PROC to SOURCE's latest flymake callback.
STDERR is the buffer that collected the process's standard error."
  (with-current-buffer source
    (let ((report-fn fxscope--flymake-report-fn))
      (cond
       ((not report-fn))                 ; the mode was turned off
       ((not (equal (process-get proc 'fxscope-modtime)
                    (visited-file-modtime)))
        (flymake-log :debug "fxscope: file saved during the check, again")
        (fxscope--flymake-start report-fn))
       ((and (eq (process-status proc) 'exit)
             (zerop (process-exit-status proc)))
        (let ((report (with-current-buffer (process-buffer proc)
                        (fxscope--json-parse (buffer-string)))))
          (setq fxscope--flymake-checked-modtime
                (process-get proc 'fxscope-modtime))
          (funcall report-fn (fxscope-flymake-diagnostics report source)
                   :region (cons (point-min) (point-max)))))
       (t
        (let ((why (string-trim (with-current-buffer stderr
                                  (buffer-string)))))
          (funcall report-fn :panic
                   :explanation
                   (format "fxscope check failed: %s"
                           (if (string-empty-p why)
                               (format "exit %d" (process-exit-status proc))
                             why)))))))))

(defun fxscope--flymake-sentinel (source stderr)
  "A process sentinel that reports to buffer SOURCE's flymake.
STDERR is the buffer that collects the process's standard error."
  (lambda (proc _event)
    (when (memq (process-status proc) '(exit signal))
      (unwind-protect
          (when (buffer-live-p source)
            (with-current-buffer source
              (setq fxscope--flymake-process nil))
            (fxscope--flymake-report proc source stderr))
        (kill-buffer (process-buffer proc))
        (let ((err-proc (get-buffer-process stderr)))
          (when err-proc (delete-process err-proc)))
        (kill-buffer stderr)))))

(defun fxscope--flymake-start (report-fn)
  "Start `fxscope check' for the current buffer, reporting to REPORT-FN."
  (setq fxscope--flymake-report-fn report-fn)
  (let* ((root (expand-file-name (fxscope--root (buffer-file-name))))
         (default-directory root)
         (stderr (generate-new-buffer " *fxscope-flymake-stderr*")))
    (setq fxscope--flymake-process
          (make-process
           :name "fxscope-flymake" :noquery t :connection-type 'pipe
           :buffer (generate-new-buffer " *fxscope-flymake*")
           :stderr stderr
           :command `(,fxscope-program
                      "check" ,@fxscope-check-args
                      "--format" "json" "--fail-on" "never"
                      "--root" ,(directory-file-name root))
           :sentinel (fxscope--flymake-sentinel (current-buffer) stderr)))
    (process-put fxscope--flymake-process 'fxscope-modtime
                 (visited-file-modtime))))

(defun fxscope-flymake (report-fn &rest _args)
  "Flymake backend over `fxscope check --format json'.
It checks the workspace (unchanged targets come from the cache) and
reports the findings located in this buffer's file to REPORT-FN."
  (unless (executable-find fxscope-program)
    (error "Cannot find the fxscope executable %S" fxscope-program))
  (cond ((not (buffer-file-name)) (funcall report-fn nil))
        ((process-live-p fxscope--flymake-process)
         (setq fxscope--flymake-report-fn report-fn))
        ((equal fxscope--flymake-checked-modtime (visited-file-modtime))
         ;; Not saved since the last check: keep what flymake shows.
         (funcall report-fn nil :region (cons (point-max) (point-max))))
        (t (fxscope--flymake-start report-fn))))

(defun fxscope--flymake-reinstall ()
  "Re-add `fxscope-flymake' to the backends of an eglot-managed buffer.
eglot 1.9 sets `flymake-diagnostic-functions' to its own backend only."
  (when (and (bound-and-true-p fxscope-flymake-mode)
             (not (memq #'fxscope-flymake flymake-diagnostic-functions)))
    (add-hook 'flymake-diagnostic-functions #'fxscope-flymake nil t)
    (when flymake-mode
      (flymake-start))))

;;;###autoload
(define-minor-mode fxscope-flymake-mode
  "Report fxscope findings through flymake, next to any other backend.
The check runs when the mode is enabled and on every save, through
`fxscope check --daemon'; it sees the file as saved."
  :lighter " fxscope"
  (cond
   (fxscope-flymake-mode
    (add-hook 'flymake-diagnostic-functions #'fxscope-flymake nil t)
    (add-hook 'eglot-managed-mode-hook #'fxscope--flymake-reinstall)
    (flymake-mode 1)
    (flymake-start))
   (t
    (remove-hook 'flymake-diagnostic-functions #'fxscope-flymake t)
    (setq fxscope--flymake-report-fn nil
          fxscope--flymake-checked-modtime nil)
    (when (process-live-p fxscope--flymake-process)
      (kill-process fxscope--flymake-process)))))

(provide 'fxscope)
;;; fxscope.el ends here
