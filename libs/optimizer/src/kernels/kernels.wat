;; Float32 update kernels over WebAssembly SIMD (f32x4), for tensors that live in the module's
;; memory (see ../memory/tensor-memory.ts; build-wasm.js assembles them over a shared memory, as
;; declared below, and over a private one). Every kernel performs exactly the float32
;; operations of its reference in reference-kernels.ts, in the same order, with no fused operations,
;; so both give the same bits. Built into wasm-binary.ts by `npx nx run optimizer:build-wasm`.
;;
;; Conventions: pointers are byte offsets of 16-byte aligned arrays; n4 counts 4-lane vectors and
;; is a multiple of 4 where a kernel takes four vectors per iteration (the arena pads every array
;; to a multiple of 16 elements, and padding lanes hold zeros, on which every kernel is harmless).
;; Four vectors per iteration, because V8 adds an interrupt check and pointer updates to every
;; iteration: SGD over 1M elements ran at 6.8 G elements/s taking one vector at a time, 8.5 taking
;; four.
;;
;; The update kernels take the gradient as the rules' x, unclipped: clipping is a pass of its own
;; ("clip") into a scratch array, run only when it can change a value. Without it, x = g exactly.
(module
  (import "env" "memory" (memory 1 65535 shared))

  ;; 1 if any of the first n4 vectors at $g holds NaN or ±Infinity, else 0.
  (func (export "nonFinite") (param $g i32) (param $n4 i32) (result i32)
    (local $end i32) (local $acc v128) (local $x0 v128) (local $x1 v128) (local $x2 v128) (local $x3 v128)
    (local.set $end (i32.add (local.get $g) (i32.shl (local.get $n4) (i32.const 4))))
    (local.set $acc (v128.const f32x4 0 0 0 0))
    (block $done
      (br_if $done (i32.ge_u (local.get $g) (local.get $end)))
      (loop $next
        (local.set $x0 (v128.load offset=0 (local.get $g)))
        (local.set $x1 (v128.load offset=16 (local.get $g)))
        (local.set $x2 (v128.load offset=32 (local.get $g)))
        (local.set $x3 (v128.load offset=48 (local.get $g)))
        ;; x - x is 0 for finite x and NaN otherwise; NaN sticks in the sum. The four are summed
        ;; first, so that only one add per iteration waits for the previous iteration's.
        (local.set $acc (f32x4.add (local.get $acc) (f32x4.add
          (f32x4.add (f32x4.sub (local.get $x0) (local.get $x0)) (f32x4.sub (local.get $x1) (local.get $x1)))
          (f32x4.add (f32x4.sub (local.get $x2) (local.get $x2)) (f32x4.sub (local.get $x3) (local.get $x3))))))
        (local.set $g (i32.add (local.get $g) (i32.const 64)))
        (br_if $next (i32.lt_u (local.get $g) (local.get $end)))))
    (v128.any_true (f32x4.ne (local.get $acc) (local.get $acc))))

  ;; The sum of squares of min(max(g, -cv), cv), accumulated in float64: lane i sums the elements
  ;; i mod 4 in order, and the result is (s0 + s1) + (s2 + s3). pmax/pmin with g first give what
  ;; max/min would (see "clip").
  (func (export "sumSquares") (param $g i32) (param $n4 i32) (param $cv f32) (result f64)
    (local $end i32) (local $x v128) (local $lo v128) (local $hi v128)
    (local $acc01 v128) (local $acc23 v128) (local $vcv v128) (local $vncv v128)
    (local.set $end (i32.add (local.get $g) (i32.shl (local.get $n4) (i32.const 4))))
    (local.set $vcv (f32x4.splat (local.get $cv)))
    (local.set $vncv (f32x4.neg (local.get $vcv)))
    (local.set $acc01 (v128.const f64x2 0 0))
    (local.set $acc23 (v128.const f64x2 0 0))
    (block $done
      (br_if $done (i32.ge_u (local.get $g) (local.get $end)))
      (loop $next
        (local.set $x (f32x4.pmin (f32x4.pmax (v128.load (local.get $g)) (local.get $vncv)) (local.get $vcv)))
        (local.set $lo (f64x2.promote_low_f32x4 (local.get $x)))
        (local.set $hi (f64x2.promote_low_f32x4
          (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $x) (local.get $x))))
        (local.set $acc01 (f64x2.add (local.get $acc01) (f64x2.mul (local.get $lo) (local.get $lo))))
        (local.set $acc23 (f64x2.add (local.get $acc23) (f64x2.mul (local.get $hi) (local.get $hi))))
        (local.set $g (i32.add (local.get $g) (i32.const 16)))
        (br_if $next (i32.lt_u (local.get $g) (local.get $end)))))
    (f64.add
      (f64.add (f64x2.extract_lane 0 (local.get $acc01)) (f64x2.extract_lane 1 (local.get $acc01)))
      (f64.add (f64x2.extract_lane 0 (local.get $acc23)) (f64x2.extract_lane 1 (local.get $acc23)))))

  ;; The clipped gradient x = min(max(g, -cv), cv) · s, written to $x ($x may be $g).
  ;;
  ;; pmax(a, b) is (a < b ? b : a) and pmin(a, b) is (b < a ? b : a): one instruction each, where
  ;; V8 spends several on the NaN and signed-zero rules of max/min. With g as the first operand
  ;; they give what max/min give here. cv is +0 to +Infinity (the config's clipValue > 0, rounded
  ;; to float32), never NaN, so a comparison is false only for a NaN g (NaN with both) or for
  ;; equal values, which differ at most in the sign of a zero: g = ±0 against -cv = -0 or cv = +0,
  ;; where max(±0, -0) and min(±0, +0) are that ±0 itself, as pmax/pmin return.
  (func (export "clip") (param $x i32) (param $g i32) (param $n4 i32) (param $cv f32) (param $s f32)
    (local $end i32) (local $vcv v128) (local $vncv v128) (local $vs v128)
    (local.set $vcv (f32x4.splat (local.get $cv)))
    (local.set $vncv (f32x4.neg (local.get $vcv)))
    (local.set $vs (f32x4.splat (local.get $s)))
    (local.set $end (i32.add (local.get $g) (i32.shl (local.get $n4) (i32.const 4))))
    (block $done
      (br_if $done (i32.ge_u (local.get $g) (local.get $end)))
      (loop $next
        (v128.store offset=0 (local.get $x) (f32x4.mul
          (f32x4.pmin (f32x4.pmax (v128.load offset=0 (local.get $g)) (local.get $vncv)) (local.get $vcv))
          (local.get $vs)))
        (v128.store offset=16 (local.get $x) (f32x4.mul
          (f32x4.pmin (f32x4.pmax (v128.load offset=16 (local.get $g)) (local.get $vncv)) (local.get $vcv))
          (local.get $vs)))
        (v128.store offset=32 (local.get $x) (f32x4.mul
          (f32x4.pmin (f32x4.pmax (v128.load offset=32 (local.get $g)) (local.get $vncv)) (local.get $vcv))
          (local.get $vs)))
        (v128.store offset=48 (local.get $x) (f32x4.mul
          (f32x4.pmin (f32x4.pmax (v128.load offset=48 (local.get $g)) (local.get $vncv)) (local.get $vcv))
          (local.get $vs)))
        (local.set $x (i32.add (local.get $x) (i32.const 64)))
        (local.set $g (i32.add (local.get $g) (i32.const 64)))
        (br_if $next (i32.lt_u (local.get $g) (local.get $end))))))

  ;; SGD without momentum: d = g + wd·p;  p = p − lr·d
  (func (export "sgd") (param $p i32) (param $g i32) (param $n4 i32) (param $lr f32) (param $wd f32)
    (local $end i32) (local $w v128) (local $vlr v128) (local $vwd v128)
    (local.set $vlr (f32x4.splat (local.get $lr)))
    (local.set $vwd (f32x4.splat (local.get $wd)))
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $n4) (i32.const 4))))
    (block $done
      (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
      (loop $next
        (local.set $w (v128.load offset=0 (local.get $p)))
        (v128.store offset=0 (local.get $p) (f32x4.sub (local.get $w) (f32x4.mul (local.get $vlr)
          (f32x4.add (v128.load offset=0 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w))))))
        (local.set $w (v128.load offset=16 (local.get $p)))
        (v128.store offset=16 (local.get $p) (f32x4.sub (local.get $w) (f32x4.mul (local.get $vlr)
          (f32x4.add (v128.load offset=16 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w))))))
        (local.set $w (v128.load offset=32 (local.get $p)))
        (v128.store offset=32 (local.get $p) (f32x4.sub (local.get $w) (f32x4.mul (local.get $vlr)
          (f32x4.add (v128.load offset=32 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w))))))
        (local.set $w (v128.load offset=48 (local.get $p)))
        (v128.store offset=48 (local.get $p) (f32x4.sub (local.get $w) (f32x4.mul (local.get $vlr)
          (f32x4.add (v128.load offset=48 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w))))))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (local.set $g (i32.add (local.get $g) (i32.const 64)))
        (br_if $next (i32.lt_u (local.get $p) (local.get $end))))))

  ;; SGD with momentum: d = g + wd·p;  v = mu·v − lr·d;  p = p + v
  (func (export "sgdMomentum")
    (param $p i32) (param $g i32) (param $v i32) (param $n4 i32) (param $lr f32) (param $mu f32) (param $wd f32)
    (local $end i32) (local $w v128) (local $lrd v128) (local $vel v128)
    (local $vlr v128) (local $vmu v128) (local $vwd v128)
    (local.set $vlr (f32x4.splat (local.get $lr)))
    (local.set $vmu (f32x4.splat (local.get $mu)))
    (local.set $vwd (f32x4.splat (local.get $wd)))
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $n4) (i32.const 4))))
    (block $done
      (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
      (loop $next
        (local.set $w (v128.load offset=0 (local.get $p)))
        (local.set $lrd (f32x4.mul (local.get $vlr)
          (f32x4.add (v128.load offset=0 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w)))))
        (local.set $vel (f32x4.sub (f32x4.mul (local.get $vmu) (v128.load offset=0 (local.get $v))) (local.get $lrd)))
        (v128.store offset=0 (local.get $v) (local.get $vel))
        (v128.store offset=0 (local.get $p) (f32x4.add (local.get $w) (local.get $vel)))
        (local.set $w (v128.load offset=16 (local.get $p)))
        (local.set $lrd (f32x4.mul (local.get $vlr)
          (f32x4.add (v128.load offset=16 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w)))))
        (local.set $vel (f32x4.sub (f32x4.mul (local.get $vmu) (v128.load offset=16 (local.get $v))) (local.get $lrd)))
        (v128.store offset=16 (local.get $v) (local.get $vel))
        (v128.store offset=16 (local.get $p) (f32x4.add (local.get $w) (local.get $vel)))
        (local.set $w (v128.load offset=32 (local.get $p)))
        (local.set $lrd (f32x4.mul (local.get $vlr)
          (f32x4.add (v128.load offset=32 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w)))))
        (local.set $vel (f32x4.sub (f32x4.mul (local.get $vmu) (v128.load offset=32 (local.get $v))) (local.get $lrd)))
        (v128.store offset=32 (local.get $v) (local.get $vel))
        (v128.store offset=32 (local.get $p) (f32x4.add (local.get $w) (local.get $vel)))
        (local.set $w (v128.load offset=48 (local.get $p)))
        (local.set $lrd (f32x4.mul (local.get $vlr)
          (f32x4.add (v128.load offset=48 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w)))))
        (local.set $vel (f32x4.sub (f32x4.mul (local.get $vmu) (v128.load offset=48 (local.get $v))) (local.get $lrd)))
        (v128.store offset=48 (local.get $v) (local.get $vel))
        (v128.store offset=48 (local.get $p) (f32x4.add (local.get $w) (local.get $vel)))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (local.set $g (i32.add (local.get $g) (i32.const 64)))
        (local.set $v (i32.add (local.get $v) (i32.const 64)))
        (br_if $next (i32.lt_u (local.get $p) (local.get $end))))))

  ;; Nesterov momentum: d = g + wd·p;  v = mu·v − lr·d;  p = p + (mu·v − lr·d)
  (func (export "sgdNesterov")
    (param $p i32) (param $g i32) (param $v i32) (param $n4 i32) (param $lr f32) (param $mu f32) (param $wd f32)
    (local $end i32) (local $w v128) (local $lrd v128) (local $vel v128)
    (local $vlr v128) (local $vmu v128) (local $vwd v128)
    (local.set $vlr (f32x4.splat (local.get $lr)))
    (local.set $vmu (f32x4.splat (local.get $mu)))
    (local.set $vwd (f32x4.splat (local.get $wd)))
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $n4) (i32.const 4))))
    (block $done
      (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
      (loop $next
        (local.set $w (v128.load offset=0 (local.get $p)))
        (local.set $lrd (f32x4.mul (local.get $vlr)
          (f32x4.add (v128.load offset=0 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w)))))
        (local.set $vel (f32x4.sub (f32x4.mul (local.get $vmu) (v128.load offset=0 (local.get $v))) (local.get $lrd)))
        (v128.store offset=0 (local.get $v) (local.get $vel))
        (v128.store offset=0 (local.get $p) (f32x4.add (local.get $w)
          (f32x4.sub (f32x4.mul (local.get $vmu) (local.get $vel)) (local.get $lrd))))
        (local.set $w (v128.load offset=16 (local.get $p)))
        (local.set $lrd (f32x4.mul (local.get $vlr)
          (f32x4.add (v128.load offset=16 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w)))))
        (local.set $vel (f32x4.sub (f32x4.mul (local.get $vmu) (v128.load offset=16 (local.get $v))) (local.get $lrd)))
        (v128.store offset=16 (local.get $v) (local.get $vel))
        (v128.store offset=16 (local.get $p) (f32x4.add (local.get $w)
          (f32x4.sub (f32x4.mul (local.get $vmu) (local.get $vel)) (local.get $lrd))))
        (local.set $w (v128.load offset=32 (local.get $p)))
        (local.set $lrd (f32x4.mul (local.get $vlr)
          (f32x4.add (v128.load offset=32 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w)))))
        (local.set $vel (f32x4.sub (f32x4.mul (local.get $vmu) (v128.load offset=32 (local.get $v))) (local.get $lrd)))
        (v128.store offset=32 (local.get $v) (local.get $vel))
        (v128.store offset=32 (local.get $p) (f32x4.add (local.get $w)
          (f32x4.sub (f32x4.mul (local.get $vmu) (local.get $vel)) (local.get $lrd))))
        (local.set $w (v128.load offset=48 (local.get $p)))
        (local.set $lrd (f32x4.mul (local.get $vlr)
          (f32x4.add (v128.load offset=48 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w)))))
        (local.set $vel (f32x4.sub (f32x4.mul (local.get $vmu) (v128.load offset=48 (local.get $v))) (local.get $lrd)))
        (v128.store offset=48 (local.get $v) (local.get $vel))
        (v128.store offset=48 (local.get $p) (f32x4.add (local.get $w)
          (f32x4.sub (f32x4.mul (local.get $vmu) (local.get $vel)) (local.get $lrd))))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (local.set $g (i32.add (local.get $g) (i32.const 64)))
        (local.set $v (i32.add (local.get $v) (i32.const 64)))
        (br_if $next (i32.lt_u (local.get $p) (local.get $end))))))

  ;; Adam and AdamW: d = g + wd·p;  m = b1·m + omb1·d;  v = b2·v + omb2·(d·d);
  ;; p = p·decay − lrT·(m / (sqrt(v) + epsHat))
  (func (export "adam")
    (param $p i32) (param $g i32) (param $m i32) (param $v i32) (param $n4 i32)
    (param $lrT f32) (param $b1 f32) (param $omb1 f32) (param $b2 f32) (param $omb2 f32)
    (param $epsHat f32) (param $wd f32) (param $decay f32)
    (local $end i32) (local $w v128) (local $d v128) (local $mm v128) (local $vv v128)
    (local $vlrT v128) (local $vb1 v128) (local $vomb1 v128) (local $vb2 v128) (local $vomb2 v128)
    (local $veps v128) (local $vwd v128) (local $vdecay v128)
    (local.set $vlrT (f32x4.splat (local.get $lrT)))
    (local.set $vb1 (f32x4.splat (local.get $b1)))
    (local.set $vomb1 (f32x4.splat (local.get $omb1)))
    (local.set $vb2 (f32x4.splat (local.get $b2)))
    (local.set $vomb2 (f32x4.splat (local.get $omb2)))
    (local.set $veps (f32x4.splat (local.get $epsHat)))
    (local.set $vwd (f32x4.splat (local.get $wd)))
    (local.set $vdecay (f32x4.splat (local.get $decay)))
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $n4) (i32.const 4))))
    (block $done
      (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
      (loop $next
        (local.set $w (v128.load offset=0 (local.get $p)))
        (local.set $d (f32x4.add (v128.load offset=0 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w))))
        (local.set $mm (f32x4.add (f32x4.mul (local.get $vb1) (v128.load offset=0 (local.get $m)))
                                  (f32x4.mul (local.get $vomb1) (local.get $d))))
        (local.set $vv (f32x4.add (f32x4.mul (local.get $vb2) (v128.load offset=0 (local.get $v)))
                                  (f32x4.mul (local.get $vomb2) (f32x4.mul (local.get $d) (local.get $d)))))
        (v128.store offset=0 (local.get $m) (local.get $mm))
        (v128.store offset=0 (local.get $v) (local.get $vv))
        (v128.store offset=0 (local.get $p) (f32x4.sub
          (f32x4.mul (local.get $w) (local.get $vdecay))
          (f32x4.mul (local.get $vlrT)
            (f32x4.div (local.get $mm) (f32x4.add (f32x4.sqrt (local.get $vv)) (local.get $veps))))))
        (local.set $w (v128.load offset=16 (local.get $p)))
        (local.set $d (f32x4.add (v128.load offset=16 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w))))
        (local.set $mm (f32x4.add (f32x4.mul (local.get $vb1) (v128.load offset=16 (local.get $m)))
                                  (f32x4.mul (local.get $vomb1) (local.get $d))))
        (local.set $vv (f32x4.add (f32x4.mul (local.get $vb2) (v128.load offset=16 (local.get $v)))
                                  (f32x4.mul (local.get $vomb2) (f32x4.mul (local.get $d) (local.get $d)))))
        (v128.store offset=16 (local.get $m) (local.get $mm))
        (v128.store offset=16 (local.get $v) (local.get $vv))
        (v128.store offset=16 (local.get $p) (f32x4.sub
          (f32x4.mul (local.get $w) (local.get $vdecay))
          (f32x4.mul (local.get $vlrT)
            (f32x4.div (local.get $mm) (f32x4.add (f32x4.sqrt (local.get $vv)) (local.get $veps))))))
        (local.set $w (v128.load offset=32 (local.get $p)))
        (local.set $d (f32x4.add (v128.load offset=32 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w))))
        (local.set $mm (f32x4.add (f32x4.mul (local.get $vb1) (v128.load offset=32 (local.get $m)))
                                  (f32x4.mul (local.get $vomb1) (local.get $d))))
        (local.set $vv (f32x4.add (f32x4.mul (local.get $vb2) (v128.load offset=32 (local.get $v)))
                                  (f32x4.mul (local.get $vomb2) (f32x4.mul (local.get $d) (local.get $d)))))
        (v128.store offset=32 (local.get $m) (local.get $mm))
        (v128.store offset=32 (local.get $v) (local.get $vv))
        (v128.store offset=32 (local.get $p) (f32x4.sub
          (f32x4.mul (local.get $w) (local.get $vdecay))
          (f32x4.mul (local.get $vlrT)
            (f32x4.div (local.get $mm) (f32x4.add (f32x4.sqrt (local.get $vv)) (local.get $veps))))))
        (local.set $w (v128.load offset=48 (local.get $p)))
        (local.set $d (f32x4.add (v128.load offset=48 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w))))
        (local.set $mm (f32x4.add (f32x4.mul (local.get $vb1) (v128.load offset=48 (local.get $m)))
                                  (f32x4.mul (local.get $vomb1) (local.get $d))))
        (local.set $vv (f32x4.add (f32x4.mul (local.get $vb2) (v128.load offset=48 (local.get $v)))
                                  (f32x4.mul (local.get $vomb2) (f32x4.mul (local.get $d) (local.get $d)))))
        (v128.store offset=48 (local.get $m) (local.get $mm))
        (v128.store offset=48 (local.get $v) (local.get $vv))
        (v128.store offset=48 (local.get $p) (f32x4.sub
          (f32x4.mul (local.get $w) (local.get $vdecay))
          (f32x4.mul (local.get $vlrT)
            (f32x4.div (local.get $mm) (f32x4.add (f32x4.sqrt (local.get $vv)) (local.get $veps))))))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (local.set $g (i32.add (local.get $g) (i32.const 64)))
        (local.set $m (i32.add (local.get $m) (i32.const 64)))
        (local.set $v (i32.add (local.get $v) (i32.const 64)))
        (br_if $next (i32.lt_u (local.get $p) (local.get $end))))))

  ;; Adagrad: d = g + wd·p;  a = a + d·d;  p = p − lr·(d / (sqrt(a) + eps))
  (func (export "adagrad")
    (param $p i32) (param $g i32) (param $a i32) (param $n4 i32) (param $lr f32) (param $eps f32) (param $wd f32)
    (local $end i32) (local $w v128) (local $d v128) (local $acc v128)
    (local $vlr v128) (local $veps v128) (local $vwd v128)
    (local.set $vlr (f32x4.splat (local.get $lr)))
    (local.set $veps (f32x4.splat (local.get $eps)))
    (local.set $vwd (f32x4.splat (local.get $wd)))
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $n4) (i32.const 4))))
    (block $done
      (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
      (loop $next
        (local.set $w (v128.load offset=0 (local.get $p)))
        (local.set $d (f32x4.add (v128.load offset=0 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w))))
        (local.set $acc (f32x4.add (v128.load offset=0 (local.get $a)) (f32x4.mul (local.get $d) (local.get $d))))
        (v128.store offset=0 (local.get $a) (local.get $acc))
        (v128.store offset=0 (local.get $p) (f32x4.sub (local.get $w)
          (f32x4.mul (local.get $vlr)
            (f32x4.div (local.get $d) (f32x4.add (f32x4.sqrt (local.get $acc)) (local.get $veps))))))
        (local.set $w (v128.load offset=16 (local.get $p)))
        (local.set $d (f32x4.add (v128.load offset=16 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w))))
        (local.set $acc (f32x4.add (v128.load offset=16 (local.get $a)) (f32x4.mul (local.get $d) (local.get $d))))
        (v128.store offset=16 (local.get $a) (local.get $acc))
        (v128.store offset=16 (local.get $p) (f32x4.sub (local.get $w)
          (f32x4.mul (local.get $vlr)
            (f32x4.div (local.get $d) (f32x4.add (f32x4.sqrt (local.get $acc)) (local.get $veps))))))
        (local.set $w (v128.load offset=32 (local.get $p)))
        (local.set $d (f32x4.add (v128.load offset=32 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w))))
        (local.set $acc (f32x4.add (v128.load offset=32 (local.get $a)) (f32x4.mul (local.get $d) (local.get $d))))
        (v128.store offset=32 (local.get $a) (local.get $acc))
        (v128.store offset=32 (local.get $p) (f32x4.sub (local.get $w)
          (f32x4.mul (local.get $vlr)
            (f32x4.div (local.get $d) (f32x4.add (f32x4.sqrt (local.get $acc)) (local.get $veps))))))
        (local.set $w (v128.load offset=48 (local.get $p)))
        (local.set $d (f32x4.add (v128.load offset=48 (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w))))
        (local.set $acc (f32x4.add (v128.load offset=48 (local.get $a)) (f32x4.mul (local.get $d) (local.get $d))))
        (v128.store offset=48 (local.get $a) (local.get $acc))
        (v128.store offset=48 (local.get $p) (f32x4.sub (local.get $w)
          (f32x4.mul (local.get $vlr)
            (f32x4.div (local.get $d) (f32x4.add (f32x4.sqrt (local.get $acc)) (local.get $veps))))))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (local.set $g (i32.add (local.get $g) (i32.const 64)))
        (local.set $a (i32.add (local.get $a) (i32.const 64)))
        (br_if $next (i32.lt_u (local.get $p) (local.get $end))))))

  ;; Adadelta and RMSProp take one vector per iteration: their square roots and divisions, not the
  ;; loop, bound them.

  ;; Adadelta, with x = g: a = rho·a + omr·(x·x);  u = (sqrt(dacc + eps) / sqrt(a + eps))·x;
  ;; dacc = rho·dacc + omr·(u·u);  p = p − lr·(u + wd·p)
  (func (export "adadelta")
    (param $p i32) (param $g i32) (param $a i32) (param $da i32) (param $n4 i32)
    (param $lr f32) (param $rho f32) (param $omr f32) (param $eps f32) (param $wd f32)
    (local $end i32) (local $w v128) (local $x v128) (local $acc v128) (local $u v128)
    (local $vlr v128) (local $vrho v128) (local $vomr v128) (local $veps v128) (local $vwd v128)
    (local.set $vlr (f32x4.splat (local.get $lr)))
    (local.set $vrho (f32x4.splat (local.get $rho)))
    (local.set $vomr (f32x4.splat (local.get $omr)))
    (local.set $veps (f32x4.splat (local.get $eps)))
    (local.set $vwd (f32x4.splat (local.get $wd)))
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $n4) (i32.const 4))))
    (block $done
      (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
      (loop $next
        (local.set $w (v128.load (local.get $p)))
        (local.set $x (v128.load (local.get $g)))
        (local.set $acc (f32x4.add (f32x4.mul (local.get $vrho) (v128.load (local.get $a)))
                                   (f32x4.mul (local.get $vomr) (f32x4.mul (local.get $x) (local.get $x)))))
        (v128.store (local.get $a) (local.get $acc))
        (local.set $u (f32x4.mul
          (f32x4.div (f32x4.sqrt (f32x4.add (v128.load (local.get $da)) (local.get $veps)))
                     (f32x4.sqrt (f32x4.add (local.get $acc) (local.get $veps))))
          (local.get $x)))
        (v128.store (local.get $da) (f32x4.add (f32x4.mul (local.get $vrho) (v128.load (local.get $da)))
                                               (f32x4.mul (local.get $vomr) (f32x4.mul (local.get $u) (local.get $u)))))
        (v128.store (local.get $p) (f32x4.sub (local.get $w)
          (f32x4.mul (local.get $vlr) (f32x4.add (local.get $u) (f32x4.mul (local.get $vwd) (local.get $w))))))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (local.set $g (i32.add (local.get $g) (i32.const 16)))
        (local.set $a (i32.add (local.get $a) (i32.const 16)))
        (local.set $da (i32.add (local.get $da) (i32.const 16)))
        (br_if $next (i32.lt_u (local.get $p) (local.get $end))))))

  ;; RMSProp: d = g + wd·p;  sq = alpha·sq + oma·(d·d);
  ;; centered ($c ≠ 0): c = alpha·c + oma·d;  den = sqrt(max(sq − c·c, 0)) + eps;  else den = sqrt(sq) + eps
  ;; momentum ($b ≠ 0): b = mu·b + d/den;  p = p − lr·b;  else p = p − lr·(d/den)
  (func (export "rmsprop")
    (param $p i32) (param $g i32) (param $sq i32) (param $c i32) (param $b i32) (param $n4 i32)
    (param $lr f32) (param $alpha f32) (param $oma f32) (param $eps f32) (param $mu f32) (param $wd f32)
    (local $end i32) (local $w v128) (local $d v128) (local $ss v128) (local $cc v128) (local $den v128)
    (local $step v128)
    (local $vlr v128) (local $valpha v128) (local $voma v128) (local $veps v128) (local $vmu v128) (local $vwd v128)
    (local.set $vlr (f32x4.splat (local.get $lr)))
    (local.set $valpha (f32x4.splat (local.get $alpha)))
    (local.set $voma (f32x4.splat (local.get $oma)))
    (local.set $veps (f32x4.splat (local.get $eps)))
    (local.set $vmu (f32x4.splat (local.get $mu)))
    (local.set $vwd (f32x4.splat (local.get $wd)))
    (local.set $end (i32.add (local.get $p) (i32.shl (local.get $n4) (i32.const 4))))
    (block $done
      (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
      (loop $next
        (local.set $w (v128.load (local.get $p)))
        (local.set $d (f32x4.add (v128.load (local.get $g)) (f32x4.mul (local.get $vwd) (local.get $w))))
        (local.set $ss (f32x4.add (f32x4.mul (local.get $valpha) (v128.load (local.get $sq)))
                                  (f32x4.mul (local.get $voma) (f32x4.mul (local.get $d) (local.get $d)))))
        (v128.store (local.get $sq) (local.get $ss))
        (if (local.get $c)
          (then
            (local.set $cc (f32x4.add (f32x4.mul (local.get $valpha) (v128.load (local.get $c)))
                                      (f32x4.mul (local.get $voma) (local.get $d))))
            (v128.store (local.get $c) (local.get $cc))
            (local.set $den (f32x4.add
              (f32x4.sqrt (f32x4.max (f32x4.sub (local.get $ss) (f32x4.mul (local.get $cc) (local.get $cc)))
                                     (v128.const f32x4 0 0 0 0)))
              (local.get $veps)))
            (local.set $c (i32.add (local.get $c) (i32.const 16))))
          (else
            (local.set $den (f32x4.add (f32x4.sqrt (local.get $ss)) (local.get $veps)))))
        (local.set $step (f32x4.div (local.get $d) (local.get $den)))
        (if (local.get $b)
          (then
            (local.set $step (f32x4.add (f32x4.mul (local.get $vmu) (v128.load (local.get $b))) (local.get $step)))
            (v128.store (local.get $b) (local.get $step))
            (local.set $b (i32.add (local.get $b) (i32.const 16)))))
        (v128.store (local.get $p) (f32x4.sub (local.get $w) (f32x4.mul (local.get $vlr) (local.get $step))))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (local.set $g (i32.add (local.get $g) (i32.const 16)))
        (local.set $sq (i32.add (local.get $sq) (i32.const 16)))
        (br_if $next (i32.lt_u (local.get $p) (local.get $end))))))
)
