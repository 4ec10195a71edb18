"""Captured by `kpilot capture` from /tmp/oss-site/liger_kernel/ops/rms_norm.py:67: kernel _rms_norm_forward_kernel.

5 call(s) of this argument signature were observed. The kernel and its jit helpers are copied
verbatim (decorators replaced by @triton.jit); the reference is a frozen copy of the original (`_ref_*`) at
the captured config. Sizes are fixed by the capture, so every shape below is the captured call.
"""

import torch
import triton
import triton.language as tl
_CASTING_MODE_GEMMA = tl.constexpr(1)
_CASTING_MODE_LLAMA = tl.constexpr(0)
_CASTING_MODE_NONE = tl.constexpr(-1)
from triton.language.extra.libdevice import rsqrt
import base64
import io


@triton.jit
def _rms_norm_forward_kernel(
    Y_ptr,
    Y_row_stride,
    X_ptr,
    X_row_stride,
    W_ptr,
    W_row_stride,
    RSTD_ptr,
    RSTD_row_stride,
    n_cols,
    eps,
    offset,
    casting_mode: tl.constexpr,  # constexpr so the `if` blocks can be optimized out
    elementwise_affine: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
):
    """
    y_i = (x_i / (RMS)) * (offset + wi), RMS = sqrt(sum(x_i^2) / N)

    Reference:
    1. https://triton-lang.org/main/getting-started/tutorials/05-layer-norm.html
    2. https://github.com/unslothai/unsloth/blob/fd753fed99ed5f10ef8a9b7139588d9de9ddecfb/unsloth/kernels/rms_layernorm.py#L22
    3. https://arxiv.org/pdf/1910.07467
    """

    row_idx = tl.program_id(0).to(tl.int64)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols

    y_base = Y_ptr + row_idx * Y_row_stride
    x_base = X_ptr + row_idx * X_row_stride
    rstd_base = RSTD_ptr + row_idx * RSTD_row_stride

    X_row = tl.load(x_base + col_offsets, mask=mask, other=0)
    X_row_dtype = X_row.dtype
    if elementwise_affine:
        W_row = tl.load(W_ptr + col_offsets, mask=mask, other=0)

    # On Llama, only rstd is computed on fp32
    if casting_mode == _CASTING_MODE_LLAMA:
        X_row = X_row.to(tl.float32)

    # Gemma computes everything on fp32, and then casts back the output to the original dtype
    if casting_mode == _CASTING_MODE_GEMMA:
        if elementwise_affine:
            W_row = W_row.to(tl.float32)
        X_row = X_row.to(tl.float32)

    if casting_mode == _CASTING_MODE_NONE:
        eps = eps.to(X_row_dtype)
        offset = offset.to(X_row_dtype)
    else:
        # Scalar kernel params are specialized to fp32 by eager Triton but to
        # fp64 by Inductor when this kernel is launched from inside
        # torch.compile. An fp64 scalar silently promotes mean_square, rsqrt
        # and the weight multiply to float64, roughly halving throughput.
        # Pinning to fp32 is a no-op in eager and keeps both paths identical.
        eps = eps.to(tl.float32)
        offset = offset.to(tl.float32)

    mean_square = tl.sum(X_row * X_row, axis=0) / n_cols
    rstd = rsqrt(mean_square + eps)

    # We can save time by caching rms with minimal memory overhead
    # because rms is much smaller compared to X_row, as rms is for each row.
    # However, on the computation side, it can save 4 operations (*, sum, /, sqrt).
    tl.store(rstd_base, rstd)

    X_row = X_row * rstd

    # On Llama, the multiplication with the weight is done on the original dtype
    if casting_mode == _CASTING_MODE_LLAMA:
        X_row = X_row.to(X_row_dtype)

    if elementwise_affine:
        Y_row = X_row * (offset + W_row)
    else:
        Y_row = X_row

    if casting_mode == _CASTING_MODE_GEMMA:
        Y_row = Y_row.to(X_row_dtype)

    tl.store(y_base + col_offsets, Y_row, mask=mask)


KERNELS = (_rms_norm_forward_kernel,)
CONFIG = {'casting_mode': 0, 'elementwise_affine': True, 'BLOCK_SIZE': 4096, 'num_warps': 8, 'num_stages': 3}
_CAPTURED = {'casting_mode': 0, 'elementwise_affine': True, 'BLOCK_SIZE': 4096, 'num_warps': 8, 'num_stages': 3}  # written out: the reference must not follow a candidate's CONFIG
SPACE = {'casting_mode': [0], 'elementwise_affine': [True], 'BLOCK_SIZE': [4096], 'num_warps': [1, 2, 4, 8, 16], 'num_stages': [1, 2, 3, 4]}
SHAPES = {"micro": {'captured': 1}, "full": {'captured': 1}, "edge": [{'captured': 1}]}
DTYPE = 'float16'
CPU_DTYPE = 'float16'
TOLERANCE = {'float32': [1e-05, 1e-05], 'float16': [0.002, 0.004], 'bfloat16': [0.016, 0.032]}
PRECISION = "exact"


def grid(config):
    return (
        4096,
        1,
        1,
    )

# The captured arguments, in the kernel's parameter order.
_TENSORS = [{'name': 'Y_ptr', 'shape': [4096, 4096], 'stride': [4096, 1], 'dtype': 'float16', 'saved': '', 'int_range': [], 'alias_of': ''}, {'name': 'X_ptr', 'shape': [4096, 4096], 'stride': [4096, 1], 'dtype': 'float16', 'saved': '', 'int_range': [], 'alias_of': ''}, {'name': 'W_ptr', 'shape': [4096], 'stride': [1], 'dtype': 'float16', 'saved': '_rms_norm_forward_kernel.v1.W_ptr.pt', 'int_range': [], 'alias_of': ''}, {'name': 'RSTD_ptr', 'shape': [4096], 'stride': [1], 'dtype': 'float32', 'saved': '', 'int_range': [], 'alias_of': ''}]
_PARAMS = [['Y_ptr', 'tensor', None], ['Y_row_stride', 'scalar', 4096], ['X_ptr', 'tensor', None], ['X_row_stride', 'scalar', 4096], ['W_ptr', 'tensor', None], ['W_row_stride', 'scalar', 1], ['RSTD_ptr', 'tensor', None], ['RSTD_row_stride', 'scalar', 1], ['n_cols', 'scalar', 4096], ['eps', 'scalar', 1e-06], ['offset', 'scalar', 0.0], ['casting_mode', 'constexpr', 0], ['elementwise_affine', 'constexpr', True], ['BLOCK_SIZE', 'constexpr', 4096]]
_WRITTEN = [0, 3]  # tensors the captured launch wrote: its outputs, written in place
INPLACE = (0, 3)  # so the tools restore them between runs (examples/README.md, "In-place outputs")
# Values saved from the real call (torch.save, base64): the task is one file, as the sandbox binds only it.
_SAVED = {'_rms_norm_forward_kernel.v1.W_ptr.pt': 'UEsDBAAACAgAAAAAAAAAAAAAAAAAAAAAAAAqADgAX3Jtc19ub3JtX2ZvcndhcmRfa2VybmVsLnYxLldfcHRyL2RhdGEucGtsRkI0AFpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlqAAmN0b3JjaC5fdXRpbHMKX3JlYnVpbGRfdGVuc29yX3YyCnEAKChYBwAAAHN0b3JhZ2VxAWN0b3JjaApIYWxmU3RvcmFnZQpxAlgBAAAAMHEDWAMAAABjcHVxBE0AEHRxBVFLAE0AEIVxBksBhXEHiWNjb2xsZWN0aW9ucwpPcmRlcmVkRGljdApxCClScQl0cQpScQsuUEsHCPJOFLSXAAAAlwAAAFBLAwQAAAgIAAAAAAAAAAAAAAAAAAAAAAAAMQAKAF9ybXNfbm9ybV9mb3J3YXJkX2tlcm5lbC52MS5XX3B0ci8uZm9ybWF0X3ZlcnNpb25GQgYAWlpaWlpaMVBLBwi379yDAQAAAAEAAABQSwMEAAAICAAAAAAAAAAAAAAAAAAAAAAAADQAHQBfcm1zX25vcm1fZm9yd2FyZF9rZXJuZWwudjEuV19wdHIvLnN0b3JhZ2VfYWxpZ25tZW50RkIZAFpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlo2NFBLBwg/d3HpAgAAAAIAAABQSwMEAAAICAAAAAAAAAAAAAAAAAAAAAAAACsAJQBfcm1zX25vcm1fZm9yd2FyZF9rZXJuZWwudjEuV19wdHIvYnl0ZW9yZGVyRkIhAFpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWmxpdHRsZVBLBwiFPeMZBgAAAAYAAABQSwMEAAAICAAAAAAAAAAAAAAAAAAAAAAAACgAJABfcm1zX25vcm1fZm9yd2FyZF9rZXJuZWwudjEuV19wdHIvZGF0YS8wRkIgAFpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaQzupO+I5DzznO4k7gDu9OyQ7tjuqOug8IDzaO4Q8eTzmO308kzxtPJs73DpsO/Y6Bzz+O8I8RjzwO1Q7ijzFO4Y7vTtGO1s7aDv2Ozg8mzwBPC48pzxJPNs7aTzUOmU72jsnPCg87ztcPBw7CzwyPI87vjuQO108HTwMPDA8Ijv5Ozk7YjwOOzI7DDxGPKw7djuRO0c8wjonPPc7JTyZO8A7Tjx/OSQ8+juUPP87EzwXPNA7YzysPA48Njx4PDw77jvNOkY7ozsHPPg7PDxbPLU6LjxLPFM7Qzy3O3k63jvCPDU8cTzjOso72DqePAE83DxCO608zDtHO9Q7vDvXOxY7izt7O9U84DqDPE06RzsbPGI72Du3OyM84zskPDc7sDs6PAU8ozytO9I73DsQPAY84jr5O887azyEPE48VjspPJ07NjtgPCY8oDu+Omo8izscPMg7EDwyOjc8BDuePAs8oTswPA885TrBPB87HDx0O0Q8WDvtOxQ8FjxpO6Q75DvyOk07rDsmPBg87DqZO6w7zDoaO807cTs+OqU7BjwcPH48/TsoPAA7pDw2PPE6oDphPNI7izsfPKA77zw5PF08HjwsOis8cjw9PCA8gjwLPGo6PDwQPFM8GTx0O/47GToiPCI88DsXPAo6CDxtOnc8kzuIPKI6HTuJPFQ9UzsYPG88zTuaOxQ7kDxdPPQ7KTyhOwo8cDxFPNk7nzuROgc8OTvhO0I8KTyiO148Wzv5O/I6hDtzPHA7bjxyO+Q7RTx4OxQ8mDqIO3E75zt8O9U7sDw8PPM70zzNO486qjsWO3s8JDxzO6c7MTtDOzs8gzyGOmM8azsEPMQ8WDt2O5I8XzwWPD084TusOz481zxbPNA7TDzIO0g7WjxaO1o8ljpDPPM7RzzwOqs7Pzy0O5M7eTxOO5k7wzwbPME7iTvCOwI8KzuiO488ljtNPJA77jsBPLs7HzwmPFw6XDyqO6w7NTzJOzE8RzsePAI7ozvKOws7xjrIOy47GTwRPNU75jsOPFk7ZDurO7M7NDtJPLw7Pzy4Ox88DTw/PAM7vTt0PCU8JTysOzY8FjzFOxI7HjxIPMg7BDzyO5o7PTzoO+I7djsIPBc8HDzyOyQ7ujxhPIE6pjsPPB86zDsiPKg7gzvDOm08zTy+OyU7azsnO+I8jjxkPEU7JTyUO0k8+DupPDA7UTxsPCQ8hzuNPGI78TtbOyw7rjxwPBU8QTxbO+Q7/zoAPA48RzwsPAY8mDxMPMU6qTy+OzE88zpJPGg8HjwePKA7ijoHPDM86DokPD07gDs9PPs70jpqOws8pjsBPLA75DprO886ATx5O048IzxRPKQ8uTsRPL87kDxDPB07sztnPFY8OTtEOwo9BD1uPCQ97Ts3O5Y8wDyVOxo8kDwQPUs8VzwrPLk7ETsROs47CjyEPHc7JDzyO1s7KjzFO8Q8Lzz+OvM7YzsLPHk8OTs8PNc7kjw6PII7Ojx3PBU8dTs4PCI8BjzjOys8ejwmPBk8SzxZO9Q7zTtJPC87XzvfOtk7uDo1PAo8NDwpO8I6KzyTOyU8ZDs+OwM8Njw/PGc7fDvhOzQ8ADw5PLQ7yzzrO0k7rTqDO587TDy9OqE7MDxjPAM8ODyxO8w8ITzgO8I7TDwUPJw76jqzOxE8+jtDPN877jtgOwE8KTwTPBY8DDu+O6I77Dq5O408UDywPEE8BzzmOss77ju3PAo8tTwkPAg8ZTtyO7M7pDoaO288rjvyOhk84DvuOxc7djwkPBk88TqtPE860TtePDk8Mzx2Ov47mDxePDg8ETzdOzM8ozqxO2A7QDt/O2g7EDtAPNI7bzrJPKY7sjvFPJU8djscPLM7RzxMPOA6OjxQPBU81zkDPJA8XDz8OkE7mDyyOj87+zswPBQ7kjsbPOI7MTwtPJA79jtUPH48RTzpO8k7Wzv9Oyk8GDwRPIk71jo0PG48nDwIPKk7aDvwOho8DDz0O8U7dTxvO+c67joqPFA8VTwOPUs7TDuRPAc71jkWPII8wzxDPOo7xjouOw88dzuYO/k7PjySPBI8NztRPNc7VDyvO+E6DTwMPCQ8YDr/PHg8nDyFO3Y8CjzhOZo8nDvoO9k7CDxiPKQ7CDwNPBg7VTzEOwM8mjvBOi08jjtDPIE8QjyaO5A7SDxSO/Q8Nzz5O8A66TsIPB882TtGPGo7zjpQOyA8KzxeO5c75TsmPH88ADtmOzw8WDysOzo8WDwDPbg7QjwFO8A7LjxzOqo8YzsCPBU8Ojy6Oys8/zvWO6E7VDz2OoI7BTwXPEA8uTutOjQ8izoSPKg77jrmO208WzxCPDQ7fzzfOpg89zsYPLs7uTuDOos86jvTO0I8MzxfOok8FzxTPJ86/jvcO5I5gTynOxM8OzvuO488NTzNOj48rDz8PCg7lDxePM47YjzMPMw7Vzw8O2A8KzwMPB485jspPEQ8qTxiPBE8yjuiPEw8yzsiOk88GDyiO5I80DrNO4A7yjo1O4A7lTysPBg7hzsyPAc8SjwrPFk8eTsdPCo8GjwgPII8RDoqOzo7YTsTPL86AzxhO8E7gzxPPOY6WzwHPAk9eTpzOss7azw2PDE7RzvXPDo8JjxoPJQ8NTvCO1E8QjzIOzQ8wzoSPDo8OTwfPA08EzwUPIs86DywO4I8cTzrO0w8UDwnPCQ77zpbPJg7wTuoPKg74Dp2Oik7ITwiPLc7YjwDOwo76jstO0o72TtUPBM8XjymOzc8bzyMPK47ATykO/s7TTx+Oi08QzygO1w72DszPEo8FTwDPF875jucPLs78zo2PGw7Bjx1O4U8mDu7O9g8njwcPAk7ojuYOhY7DjxoPNQ79zorO448KTvDO2A8tTsKPYg7bjzTO+I6CTxmOlk8nTsRPAw8VDsxO5w7hTuNO4A7RDyDO5s72DuZPJI8EjzfO7U7JDp+O5o8hju+O8887DtGPPg6MTsXOxc7kDwHPME77DsiO7A7YDxHPFE73ztiPGc8Tjy6O2k7kjwyPF489DkxO8w7JjwmPG48pDtdPNg8WzxWOwA8hTxHPNc7OTvIPE47TDxZOxc8yTobOj471TuoO287+jplOpk7OjwXPB880DvHPKE6kzzxO9o8azxoPEU8kzt2Ohg7ZTxoOxo8qDxGPCQ8ETvSO9I7ZTscO/s7eDsCPFY8RjyJO2s7ajx6PCg8ijxWOwc8fzuSPAE8LTueO/U68Tq+Ogg8rzydPE08fDxkPAM8UTvFPDE86junOmY8+TtGO4A8SjsaPZE60zo1PCQ73zt4PPQ7iTwzOw08AjyDPLY7PDySPCM7lzsIPPw79jtGPHg8Czw1PC48YDy8Onw8CjwUPBw7Tju4Ozw8ZzqKO+I7+DsxPAg8wzsVO5M7Ezw3PEA8KTtQPJE7BDxFPIQ7JjuKO+s8hTxeO0g7STw9PIE77DwuPBI8OTsrPEc8KjxzO1I8HTupPA88HjyNO3o8XDwaPFc7PzxEPFs8qDv5Oy08kDz/Oyo83DvnPLw6bTojPMk78zr3Ow88XjvsO0Y8ojpFPCU6KjupO4Q61zt+O6M8IjoSPAA8QjwCPeU6FjvBPC87kjs3O/E61TrCOkQ7DTwUPJw7WjzsOyo8bzuPPF082juBO+g6Ajy1O0A7ajxCO6M8qTuUPOA7BjxePG86PjxFPFg7/zqQOgQ8XjxSPE47yTr0Olg7NzwDPC08NjopPHc7azooPCg8sjtSPBg8ATvkO8E7QTyqPOQ70zsKPHo6VjsPPMs8ajtDO2g71DpKPFs8QzxPO5s61DohPM47EDz+Oig8kjoVPC06TDsJPHc8RDu4PDw8zjwUO1Y72DoePM07ejwIPDE8bzxnPKk7FzxTPIo8Djx+PJY8NTpsO008/ju4O1Y7pTyfOxM7jzrdO9E8kzzUPLA7PDz0O0o6pTyVOzc8UDunPBs8nzudO047Pjz8Or476jqMOzw8kjurO9Q7rztMPBE8ezvKO9c7gTyXPAo8sDvEO808sztCOsY7yjsjPPM8ijwBPAc89TuzOyc86jtxPCA8PTxgOxQ8XTxIPBQ8CjvgOlM81jzpOyc8wzthPMw73zvxOpw7uzqtO4A7gTyPO/Q68zvEPH472DpRPDo8/TtcPH86Gjw6O7o88zv2Ol86bTxHPHg6uzsLPDY8GDxKPII8kDtNPFo8KTwHPF86mTtDOw08lzpDPD49gjuuPKY7ijtCOw08LTx1PL47tDv7O9Y6DzsTPEk8TjpGO0U6hDw6PB486zvvO708cDtgO3s7FTwHPHw83Ds9OoM8VDwZPGM8JjzCO6I7qjotPVc7ZTy1O1k8nDu7PB08bjqFPMg8fTwOOtA62TpFPAc7ODwyPCk7mzqsPFg7RDsqO1Y8RTuxO1Q62TsVOxs8NDwOPCs6fzuTO3w7oDrUOxk7KzsDO8E7rDyYO6E7UjszPFY8BTxNPG88HDywOwM8Vzs6PJE7VzwWPWk7KjwsPCY8EDzsO4E7BTxIPG08TjyuOjE8zTs8PCM8IDzFO+o7UDzpOxE8tjtdPFU78Dv/O7s8hTxGPMs7TTyrOiw8oDs1PF07DDsoPFQ82zsSPGA8ODw4PBU6cTxAPAw7OTxLOxs8szuHOwI7sDs1PBA8lzsBPAs8JzxQPOo60TvxOww82Dy0Oyg8SDyCOiw8GzsdPI473DvTO7w8YjsjPHw7QzuLOx88VDx0PPM65ToePGo8djwsO+07uTxJPMI8bDzUPLc7CztzOyI82TthPPU5xjrMOv46PjwzO/07qjswPJA7LjyuOuQ7WDyOOuQ7YTy0PJ48HTx4O2488TocPNI7Ojz2Oi88fjxHPAs8czwhPPA6MDtNO5I6IjyOO047hzwTPHg8zTlKO/g7ijwIO2M62DpkO/I7SzsOPAA8fjwKPIE8izw8PKg6cjssPIU8BDutPAA8xjriOz08aDwTPAc80DpIPDg8vDvZPBQ8mjvJO7A68DlsO+w70zt+PNs7WzwlPAY8zTsRPCw77jtrO1k7XDxRPIw80jwMPBE8kTtwO4g7CDzuPJE8QDzsPEY6HDz+Ovg73jqiPLM7njuNORA8bzxWPIc8fDxKPJ07uDqnOlE8fjufOyo8jztAPGo8HDwBPP06LjuoPH46szraOyk8/zsMPL08qTs8PP073zzmOmc7rToUPDU8YToSPAI87zuBPNA6eDy1O1E8ujurOzU8zTs1PLI6ADwtPKY7rzsQPJ87uTtDPNo7QTv4Ow47EDtxPEs7qDoTPOw7AjxNPGc8FzvEOWo8Mjx9OzQ8BTxoO3M6AjxPPKA7PDzjO407Ajy7O7E7dzxrPBw7LzuhO4U8XTwOPBM87DyrO3I7nTx4Ogo8xjwcO0I8PTyOO7w6DDyAPGU80DoEOz88xDvwOyI8ZTwyPBo85TtEPIA75zojPI884DsvPEY8PztMPMQ7SzsmPDM78zsvO5Y89DsFPJk8vjoiPOw7bzyUO+A69TsEO3w7WTwQPEY6Fjz5O/o7YDooPAQ8sDsNPE07DjypPKY7ojy6Oy88OjwDPAs8MDsSO688LDxWPPA7ZjyUO486bTwTOzk8STvBOws8njwdPLk7ljzJO8s8zDtKPEY7bzz6O4g87jskPOI6bjxtPFw8UTwWPFI8tjrVO3o7kTtKPKA7IDwAPHM8mTxmO1U8gDtbOz87ojs7PC48pjpHO/I6hjxgPPQ6Tzt7PAE8RTvuO+A7GTybO4k78Ts6O5M7YjwxPPo6CTorPIU8FDw5PJs7mjvxOzA8yTpwPKI7jDuTPJA65zovO/A7tzw2OxI7wDskPA089zoEPBY8tjt6O307zDsBPNo7VDw5PCg8zjx1OxE8kjwdPAM8bDwGPLU7BDwNPOk8FzwLPBc88zsyPMo6OzzqO1E8NTsHO0E84DpuOwM88jpcO2A7mDxWPBk7wjt1PIo8FjwnOxI7Xzt1PNo6RDvfOz87LTwfPGk8/jupO7g7Hjw6PAg8TjxSO7g8ATyYOws86DvFPJ87ATsXO1E8GjsJPAI80Dv6O3U6sTtqPD88bDwqPE48CzspPMs7FjxRO3U7IjwIPNs6TTz3Op07BzyYOlA8LzwDPDw78TuwOnQ74jo8PEg68jsNOzk8bjwCOxU8XTwUPBM7SDzrO9M7STyKO1Y8STxQPOc7ozvoPA878jolPMk6yzsBO3k73jt4PEs8MjunPCI8oTvGOpI8MjxIPAk8kjxVOxg8XDw3OzQ8mTsMPJo8KDz2Oz87cTtCPB88pjp3PIc7djxzPA47QDvLOt47hDvRO9Y7DzxIPC88hjvvOlw8jjuXPBo8SDsdPJI7oDxiO8M7tzw4PE87xjsjPCA8ZTzSOzE80Ts4PXA8fzwiPKQ6ZTutPHg7lztVPGY6mDuRPOE7ojuPO1U7NTx4PEM8CDyEPEw72jpbO4o7DTz+Ows8LDy3OxE83zzuOkI8VzydPGI8GTxJPJQ75Tv7Ogw89DvUPMk7mjqXPEo8pTstOw88nDu8O347bDszO0s7QjyMPE88pDuEPNg7QDpGPKs8IzwRO1c7BzvdO/I7JjsKO1I8MDxTO7E7SDxvPII8Lzu2PLc8pTtGO3g8nzwgPPk6zDuGOy47iTwKPEY8ZjzVO3Q8ezzrOwA8hDtzPLs6lzydOlQ7sDomPFk7NzzzOwM83DriO8o6ITxDOtE6kjyROvY7BTxkPDg8SjwvPII7WTxUPL47fjsdO3U8ITxoOxg7NjzWO4E8ODuEOwI89TtQOlg8HTzqO1o7BDyrO848/zsvOys7LDyHO/Y69jpwPIY8QTtcPEI8/TsbOzQ8aDvvO/Q7KzzcOzw78jt6POg7jDsDPOo6QzykPEw6RDowPGY8cTwkPJk7AjyUO5k7BDsvPNs7GDwVPSI8BjzROwo8BjyuO1c8wDvRPDg8dDsCPGI8PTw/PFY7rDxHPEg8KTwNPA88UjwcPJM8ZjwrPH87/DvyO7A6KjucPIg8GTsAPGU8MDw+PCo8XDygPFM7WDsrO+w7TzofPFU8pDueOxQ7jztSPDs8Fzy4POw7JzzgOw48wDlrPAU8dDuBO5A7fDvwOl071TwuPGU8yDoBPHU7kDyJPGg6pTwhPBA89jzLOwY8SDslPEc8CDzPOtI7HjzSO6k7fDsGPAk7gTy6Oxk7tjtjPBg7Cjz8OiQ76DoiPEk7xzvKO3A7ujuoOxQ89zqSO/47Bjy2O3U7ADxmO0c8VDzROgU8izxrPHk8DzyQOqQ6BTyFPFw81DuFO4k8/TpKPG87ijxLPPs7Mjw6PBs8NTuBPDc8pDwcPCs6njyMPFk8cTv8PCs84zsvO8w7YTr/O887mDxLPMI7nTpWO9w7ojzOOs07VjwXPBk73TsePAY7szucPD485DuHOrE6wTvuO287JTxOPIw8ATy/Ozg8kTycPN47yzvWO/Q7IzyQOzs7KjvZO2k61TsnPLo7tDpOPKs8ODzvOlE8njquO8w77DvyPAg8aDwHPMw7yTyGPHI8pDsyPHI7ijtIPAk8RDvWOxI7mDyGPOQ5HzxUOyk7zjoaPD872TvuOl870DtsOj48EDyDO6k6PjwLPHo84DpOPFY7SjsgPFo8Tzy3PIA82DpuPCE6MTxuO8o80DufO1o8xTouPBE6mTwwPHw6BDzCO+Q8TjwwO4s7VjskPEM7JDy3PDo88DtjO4I8CjuoPPc7ATzhPNg7+Dr5Ox06pzoQPDQ8kDwLPMw7NjvOOgY81zuVOyg72js8OgA7XDpuPHw8wDt9O108GzwpPOI7QzwIPMM6BTzeOvo8uzuuPEg8ljxWOrc7nTsIPFc8gDtGPEA8STw6PIw7hDvmO7A75jonO/07iTuGPII7KTzgO2s7DDwgPBo87zoEPAg8cjx4O0Y8wjt6On06NDzIOi47SjxdOyY8LzwOPCg8AjxfO1k8FjovPHQ6JjxxPLw7wDwePGw7xzsKPFA8ADxpO286GTskOxE8KTz7PHM7nTwOPCU8sTvSO0U89DssPDM8OztaPF47aTyRPLw5GjwRPOA7JTyoPFI85TuMPF47VDwjPGo8gjoFPG47jDyQPLg6jzsXPL47CzwrPBI8hjzXPEc8ojveO6c7xjtdO9I7nzuZPFQ8UDwBPJQ81zpoOxo7XzzMO7U7ADxsOgw8JTyKOzY8Ejy8O1Y8PDxSPLQ7hTspPDA8MzzNPFc7eTvtPDE86zu5O0M8cjwpPKI7NTuRPFU7DjzuOno70Tr6O4o84zvZPOU7ADx/OzA8mjtiPJc8LDxxPCI8Djt0PDc6uDtcPFA8FjyDO1U8ETyhO+079TuHOwE8rzzQORg8ajwlPBw8BzyUPA48MTy2O/M7UDyWPBM8QDsSPJU8XDuIPEo7eDwUPFE7LDsEPJY7FjzFOyY8MDzMOzo8PjwIPJE7QjwYPG48OTzEO807bDxRPIc7iTwLPPI7jjvDPMw66Tt9O807+Tt4PBQ8WzyWOmQ8ljxSPEw8HjxrPEs88DoHO3s72zs2O+474DuCOy47nTymPDQ74zv9O2w7UTzxOrI74zulPHE7+DxgO4w7cTuFOw08fDveOjk7jjvgO0o7Ijo9PBw7WDxKPAo78jtaPIA8jTuDPAs7cDswPCg8Bjw+OxU8/DofPCE8QzxqO2Y8WzxJO586LjqzOxE8MjwdPJ08QjwUPAs9QjwpPHc8XTyAPLc82Dt5OpU7CTw7PG07FDybPA08yjttO0Q7oTtIPL07EzwIO6Q7hzwjPAs72jorPI86PjxePCE8XzxDPAE7QTsNO/k75DtSPN87kDvFOy483Tu1O7k7RDszPKw7zjv6O208+jsuPK46BjzTO1o7ojxOOzU8WjwxPMw7fzzRPIs7ZztKPLQ8lzvuOoE8gTyRPFs82zu7OzQ8Tzy1PAg8DTqQPKE8zDvdPNQ7OjwAPAE7/DzCOwg8EDxMPFg7qjw1PGw86DsRPDg8BzwiPCQ7MTwRPFQ87jrsPAI8/DtDO8U6PzyGPFo8TjyWO/o6JjznO0M82DrLOtQ8ITwFPNs7ijsMPDQ8YjxSPII7tzvTPN47JjwVPLo79juvO2A85zuVPOE70jtiO/k7MTw5O7c79Ds+PH47EDv2O8I87TunPL47STt1PE08AzxVPGI89DpRO248pztqO5g7vTu0Ow88OzsLPBM8UjtYO+Q7IzyxO9U71zvdO347JjvmOxQ6GTx6PAg8yztxO0A9UzxUO2Q8IDwOO1g8xzsKO0w8Yzz2O+E7zDv5O1w8ljyGPLs8EzxaPOY77TpAPNg6qjzxO6o64TutO1s7hDzaO848QDwAPIw7ajwFPHg6GjzrOzo8WDz4On48CDtWPNE7nTxkO4g8uTrGOno7KjxyO5o8PjsUPDc7FDwmPFo7BDtdO1o8hTsIPEM8UjsCPLY6kTtQPFg7fjvlOuM6ZDuOO7s7qzskOzs7dDyrO/s7QzsbPNM7QjwlPEQ7KjsPPCU7SjwdPEU8qjwfO0U8izv/O/87ozyEOwA7+zw8PPA7fjuQO8M7jzzdPII7+DqAPMM83jr2O9s6FjxeOxg8NDzDO+s7XjysOjU7WTwyPJc7zjtNOw48NjxbOzY8kDsJO2Y7xDvZOqs8ojxKPH47uDpTPD08vTu4O0465zyGPAQ89Ds6PFU6FDwPPBo7hjw/PGI8KDybO0c8FDtLPOY7xjvNPOY6TTxmOkM7QzwaPFM6vzwiOww8Lzw1PNU7FzuIPE48Rjq0O2E8+jqMO9w7DTywPBA85jr4O1c8LzwUPC48Ljt5PEk8ZDqMOyE8DDxYPAY7ejwsPD884DugOgM8yTvsOtw7oDtbPB080jsfO1U8qTu4PFU8vzpBO0Q8njupO1w7Wjy/OwI8QjykOYE7FTtJPGY7TjxCOxU8WTzdOgc8ODtyPFw8HzvZOwk8cTs4O4E7PTwYPOY7tjx3OyU8azttOyc8mDyXPAg7IDzQOww8izyjO5E7/Ds1PPc7EDwVPFY7JTsVPOE7PzvSOgQ8ZzsMPGM8RzwCOp87ADvePFY7pzsNPAw8KTwPPL07LjvQO/07RDsNPCI7LTqyOSc75TtLPCs7vTt0OxE7xjz0Ou87XjzEOwM8njy4O2A8yjtYOxs80jtePHw8xDvTO5k8STypPAc8fzuqPGI64DyOPD48XTyIPF88tzzYO8s7ADwmPCo8xDuFOx47/DrgO6c7jzqDPCw8ITtGPPM6nzynO0Q8FTwfPBQ88To4Owc8xjvUPA88wDxBO+Q7KjyjOlY7ljufPHk7hjvMOgo8qDukO8E7ZTyHOyE6dTsjPCc8Gjz4O6w7kTuKO+Q7AjxIPDI8ozuyPGk8sDsoO/A6EjwGPMA6kDy1PBw7aDuIOvE7VjyhOlo89zr9O0I6OTzUPB87CTwAPBo6pDrcOjI8BjwPPBQ9xDukO0M8tzw0Oxw8cDsRPHI7TzshPD47gTxxPAE8xzwaO5Q6bzzSPFY8hzuzPM87QDxoO2Y6SjsPPFg8vzwuPB88tjwVPKU7VjxiPG08aDz9PE87KzxBPEk8Bju/PEU8eDsZOys8BDykO9I7YDwFPFA8DDy2OuU7Ijs4O2Q8AzxEPC48WzxEPEY8Qjz8O/07RjwSPLA7HDxxPIY7DzvCOpw7xTuEO+86oDwTO8g75DqgO7A7MTwCPLo7MjxjPOw7lDykPNw70Tx9Oy89hTyAPDg8uDwFPGY7rjvkO1g8tDoMOnE8PjxEOxE8jDuIPPA7+jsgPI48BjwrPDM8LztIPEc8Dzy+OhU8kzsGPPI7QDxmPF08xzvIOrw7ijstO3Y6iTsKOp47mzuPPCE8SzsoO8M7IjwjPNo6ZjuuO+w7oTs4Oxw89TuxPDo8UjtrO007yTtaO8E7rTtQO787Vjw+PPg8fzr5Oqs73DsOPFI8JjylPAo8KjtDPNA6fzwHPLk7lDymPDE7KTykPCQ7pDxQSwcIZDtfLQAgAAAAIAAAUEsDBAAACAgAAAAAAAAAAAAAAAAAAAAAAAApACkAX3Jtc19ub3JtX2ZvcndhcmRfa2VybmVsLnYxLldfcHRyL3ZlcnNpb25GQiUAWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWjMKUEsHCNGeZ1UCAAAAAgAAAFBLAwQAAAgIAAAAAAAAAAAAAAAAAAAAAAAAOAAYAF9ybXNfbm9ybV9mb3J3YXJkX2tlcm5lbC52MS5XX3B0ci8uZGF0YS9zZXJpYWxpemF0aW9uX2lkRkIUAFpaWlpaWlpaWlpaWlpaWlpaWlpaMTU3MjgxOTk1MTE4NTQ2NDMwMjYwNjQyMDEzNjg3NzQ1ODUzMjA2N1BLBwjU4vvjKAAAACgAAABQSwECAAAAAAgIAAAAAAAA8k4UtJcAAACXAAAAKgAAAAAAAAAAAAAAAAAAAAAAX3Jtc19ub3JtX2ZvcndhcmRfa2VybmVsLnYxLldfcHRyL2RhdGEucGtsUEsBAgAAAAAICAAAAAAAALfv3IMBAAAAAQAAADEAAAAAAAAAAAAAAAAAJwEAAF9ybXNfbm9ybV9mb3J3YXJkX2tlcm5lbC52MS5XX3B0ci8uZm9ybWF0X3ZlcnNpb25QSwECAAAAAAgIAAAAAAAAP3dx6QIAAAACAAAANAAAAAAAAAAAAAAAAACRAQAAX3Jtc19ub3JtX2ZvcndhcmRfa2VybmVsLnYxLldfcHRyLy5zdG9yYWdlX2FsaWdubWVudFBLAQIAAAAACAgAAAAAAACFPeMZBgAAAAYAAAArAAAAAAAAAAAAAAAAABICAABfcm1zX25vcm1fZm9yd2FyZF9rZXJuZWwudjEuV19wdHIvYnl0ZW9yZGVyUEsBAgAAAAAICAAAAAAAAGQ7Xy0AIAAAACAAACgAAAAAAAAAAAAAAAAAlgIAAF9ybXNfbm9ybV9mb3J3YXJkX2tlcm5lbC52MS5XX3B0ci9kYXRhLzBQSwECAAAAAAgIAAAAAAAA0Z5nVQIAAAACAAAAKQAAAAAAAAAAAAAAAAAQIwAAX3Jtc19ub3JtX2ZvcndhcmRfa2VybmVsLnYxLldfcHRyL3ZlcnNpb25QSwECAAAAAAgIAAAAAAAA1OL74ygAAAAoAAAAOAAAAAAAAAAAAAAAAACSIwAAX3Jtc19ub3JtX2ZvcndhcmRfa2VybmVsLnYxLldfcHRyLy5kYXRhL3NlcmlhbGl6YXRpb25faWRQSwYGLAAAAAAAAAAeAy0AAAAAAAAAAAAHAAAAAAAAAAcAAAAAAAAAhQIAAAAAAAA4JAAAAAAAAFBLBgcAAAAAvSYAAAAAAAABAAAAUEsFBgAAAAAHAAcAhQIAADgkAAAAAA=='}


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    twin = shape.get("dtype")
    out = []
    names = [a["name"] for a in _TENSORS]
    for a in _TENSORS:
        if a["alias_of"]:  # the captured call passed the same tensor twice
            out.append(out[names.index(a["alias_of"])])
            continue
        dtype = getattr(torch, twin if twin and a["dtype"] == DTYPE else a["dtype"])
        extent = 1 + sum((n - 1) * s for n, s in zip(a["shape"], a["stride"]) if n > 0)
        if any(n == 0 for n in a["shape"]):
            extent = 0
        if a["saved"]:
            vals = torch.load(io.BytesIO(base64.b64decode(_SAVED[a["saved"]]))).to(dtype)
            t = torch.empty_strided(a["shape"], a["stride"], dtype=dtype, device=device)
            out.append(t.copy_(vals.to(device)) if device != "meta" else t)
            continue
        if dtype.is_floating_point:
            base = torch.randn(extent, device=device, dtype=dtype)
        elif dtype == torch.bool:
            base = torch.randint(0, 2, (extent,), device=device).bool()
        else:
            lo, hi = a["int_range"] or [0, 1]
            base = torch.randint(lo, hi + 1, (extent,), device=device, dtype=dtype)
        out.append(base.as_strided(a["shape"], a["stride"]))
    return tuple(out)


def _run(kernel, inputs, config, clone):
    ins, clones = list(inputs), {}
    for i, t in enumerate(inputs):  # clone: written tensors (and their aliases) are cloned once each
        if clone and (i in _WRITTEN or any(inputs[j] is t for j in _WRITTEN)):  # aliases of the originals
            ins[i] = clones.setdefault(id(t), t.clone())
    it = iter(ins)
    args, meta = [], {}
    for name, kind, value in _PARAMS:
        if kind == "tensor":
            args.append(next(it))
        elif kind == "constexpr":
            meta[name] = config.get(name, value)
        else:
            args.append(value)
    kernel[grid(config)](*args, **meta, num_warps=config["num_warps"], num_stages=config["num_stages"])
    outs = tuple(ins[i] for i in _WRITTEN)
    return outs[0] if len(outs) == 1 else outs


def launch(inputs, **config):
    _run(KERNELS[0], inputs, config, clone=False)  # in place: the INPLACE inputs are the outputs


def reference(inputs):
    return _run(_REF, inputs, _CAPTURED, clone=True)  # the expected values of the INPLACE inputs


def flops(shape):
    return 0.0  # not known from a capture: no FLOP formula, so no compute roofline


def bytes_moved(shape):
    return float(67133440)  # Y_ptr written, X_ptr read, W_ptr read, RSTD_ptr written (from the kernel's loads)


@triton.jit
def _ref__rms_norm_forward_kernel(Y_ptr, Y_row_stride, X_ptr, X_row_stride, W_ptr, W_row_stride, RSTD_ptr, RSTD_row_stride, n_cols, eps, offset, casting_mode: tl.constexpr, elementwise_affine: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    """
    y_i = (x_i / (RMS)) * (offset + wi), RMS = sqrt(sum(x_i^2) / N)

    Reference:
    1. https://triton-lang.org/main/getting-started/tutorials/05-layer-norm.html
    2. https://github.com/unslothai/unsloth/blob/fd753fed99ed5f10ef8a9b7139588d9de9ddecfb/unsloth/kernels/rms_layernorm.py#L22
    3. https://arxiv.org/pdf/1910.07467
    """
    row_idx = tl.program_id(0).to(tl.int64)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    y_base = Y_ptr + row_idx * Y_row_stride
    x_base = X_ptr + row_idx * X_row_stride
    rstd_base = RSTD_ptr + row_idx * RSTD_row_stride
    X_row = tl.load(x_base + col_offsets, mask=mask, other=0)
    X_row_dtype = X_row.dtype
    if elementwise_affine:
        W_row = tl.load(W_ptr + col_offsets, mask=mask, other=0)
    if casting_mode == _CASTING_MODE_LLAMA:
        X_row = X_row.to(tl.float32)
    if casting_mode == _CASTING_MODE_GEMMA:
        if elementwise_affine:
            W_row = W_row.to(tl.float32)
        X_row = X_row.to(tl.float32)
    if casting_mode == _CASTING_MODE_NONE:
        eps = eps.to(X_row_dtype)
        offset = offset.to(X_row_dtype)
    else:
        eps = eps.to(tl.float32)
        offset = offset.to(tl.float32)
    mean_square = tl.sum(X_row * X_row, axis=0) / n_cols
    rstd = rsqrt(mean_square + eps)
    tl.store(rstd_base, rstd)
    X_row = X_row * rstd
    if casting_mode == _CASTING_MODE_LLAMA:
        X_row = X_row.to(X_row_dtype)
    if elementwise_affine:
        Y_row = X_row * (offset + W_row)
    else:
        Y_row = X_row
    if casting_mode == _CASTING_MODE_GEMMA:
        Y_row = Y_row.to(X_row_dtype)
    tl.store(y_base + col_offsets, Y_row, mask=mask)


_REF = _ref__rms_norm_forward_kernel
