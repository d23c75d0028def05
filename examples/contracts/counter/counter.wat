;; Counter contract (ABI v1, docs/contracts.md). State: the count in decimal ("0" after deploy).
;; Input: {"increment": n}; the count grows by n. Output: {"count":<new count>}.
(module
  (memory (export "memory") 1)
  (data (i32.const 0) "\22increment\22")         ;; 11 bytes at 0
  (data (i32.const 16) "{\22count\22:")          ;; 9 bytes at 16
  (data (i32.const 32) "state is not a count") ;; 20 bytes at 32
  (data (i32.const 64) "expected {\22increment\22: n}") ;; 25 bytes at 64
  ;; @runtime

  (func (export "execute") (param $sp i32) (param $sl i32) (param $ip i32) (param $il i32) (result i32)
    (local $count i64) (local $at i32) (local $n i64) (local $buf i32) (local $sl2 i32) (local $out i32) (local $o i32)
    (if (i32.gt_u (local.get $sl) (i32.const 0))
      (then
        (local.set $count (call $parse_int (local.get $sp) (i32.add (local.get $sp) (local.get $sl))))
        (if (i32.ne (global.get $pos) (i32.add (local.get $sp) (local.get $sl)))
          (then (return (call $result (i32.const 1) (i32.const 0) (i32.const 0) (i32.const 32) (i32.const 20)))))))
    (if (i32.gt_u (local.get $il) (i32.const 0))
      (then
        (local.set $at (call $find (local.get $ip) (local.get $il) (i32.const 0) (i32.const 11)))
        (if (i32.lt_s (local.get $at) (i32.const 0))
          (then (return (call $result (i32.const 2) (i32.const 0) (i32.const 0) (i32.const 64) (i32.const 25)))))
        (local.set $n (call $parse_int (i32.add (i32.add (local.get $ip) (local.get $at)) (i32.const 11)) (i32.add (local.get $ip) (local.get $il))))
        (if (i32.lt_s (global.get $pos) (i32.const 0))
          (then (return (call $result (i32.const 2) (i32.const 0) (i32.const 0) (i32.const 64) (i32.const 25)))))
        (local.set $count (i64.add (local.get $count) (local.get $n)))))
    ;; new state: the count
    (local.set $buf (call $alloc (i32.const 24)))
    (local.set $sl2 (call $write_int (local.get $count) (local.get $buf)))
    ;; output: {"count":<count>}
    (local.set $out (call $alloc (i32.const 40)))
    (local.set $o (call $copy (local.get $out) (i32.const 16) (i32.const 9)))
    (local.set $o (call $copy (local.get $o) (local.get $buf) (local.get $sl2)))
    (i32.store8 (local.get $o) (i32.const 125))
    (call $result (i32.const 0) (local.get $buf) (local.get $sl2) (local.get $out) (i32.add (i32.sub (local.get $o) (local.get $out)) (i32.const 1))))
)
