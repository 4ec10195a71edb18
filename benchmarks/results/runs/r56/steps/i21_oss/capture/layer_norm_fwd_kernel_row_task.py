"""Captured by `kpilot capture` from /tmp/oss-site/fla/modules/norm/layernorm.py:114: kernel layer_norm_fwd_kernel_row.

5 call(s) of this argument signature were observed. The kernel and its jit helpers are copied
verbatim (decorators replaced by @triton.jit); the reference is a frozen copy of the original (`_ref_*`) at
the captured config. Sizes are fixed by the capture, so every shape below is the captured call.
"""

import torch
import triton
import triton.language as tl
import base64
import io


@triton.jit
def layer_norm_fwd_kernel_row(
    x,
    y,
    w,
    b,
    res,
    res_out,
    mean,
    rstd,
    eps,
    G: tl.constexpr,
    D: tl.constexpr,
    BD: tl.constexpr,
    IS_RMS_NORM: tl.constexpr,
    HAS_RESIDUAL: tl.constexpr,
    STORE_RESIDUAL_OUT: tl.constexpr,
    HAS_WEIGHT: tl.constexpr,
    HAS_BIAS: tl.constexpr,
):
    i_t = tl.program_id(0).to(tl.int64)
    i_g = i_t % G

    x += i_t * D
    y += i_t * D
    if HAS_RESIDUAL:
        res += i_t * D
    if STORE_RESIDUAL_OUT:
        res_out += i_t * D

    o_d = tl.arange(0, BD)
    m_d = o_d < D
    b_x = tl.load(x + o_d, mask=m_d, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        b_x += tl.load(res + o_d, mask=m_d, other=0.0).to(tl.float32)
    if STORE_RESIDUAL_OUT:
        tl.store(res_out + o_d, b_x, mask=m_d)
    if not IS_RMS_NORM:
        b_mean = tl.sum(b_x, axis=0) / D
        tl.store(mean + i_t, b_mean)
        b_xbar = tl.where(m_d, b_x - b_mean, 0.0)
        b_var = tl.sum(b_xbar * b_xbar, axis=0) / D
    else:
        b_xbar = tl.where(m_d, b_x, 0.0)
        b_var = tl.sum(b_xbar * b_xbar, axis=0) / D
    b_rstd = 1 / tl.sqrt(b_var + eps)
    tl.store(rstd + i_t, b_rstd)

    if HAS_WEIGHT:
        b_w = tl.load(w + i_g * D + o_d, mask=m_d).to(tl.float32)
    if HAS_BIAS:
        b_b = tl.load(b + i_g * D + o_d, mask=m_d).to(tl.float32)
    b_x_hat = (b_x - b_mean) * b_rstd if not IS_RMS_NORM else b_x * b_rstd
    b_y = b_x_hat * b_w if HAS_WEIGHT else b_x_hat
    if HAS_BIAS:
        b_y = b_y + b_b

    tl.store(y + o_d, b_y, mask=m_d)


KERNELS = (layer_norm_fwd_kernel_row,)
CONFIG = {'G': 1, 'D': 4096, 'BD': 4096, 'IS_RMS_NORM': False, 'HAS_RESIDUAL': False, 'STORE_RESIDUAL_OUT': False, 'HAS_WEIGHT': True, 'HAS_BIAS': True, 'num_warps': 8, 'num_stages': 3}
_CAPTURED = {'G': 1, 'D': 4096, 'BD': 4096, 'IS_RMS_NORM': False, 'HAS_RESIDUAL': False, 'STORE_RESIDUAL_OUT': False, 'HAS_WEIGHT': True, 'HAS_BIAS': True, 'num_warps': 8, 'num_stages': 3}  # written out: the reference must not follow a candidate's CONFIG
SPACE = {'G': [1], 'D': [4096], 'BD': [4096], 'IS_RMS_NORM': [False], 'HAS_RESIDUAL': [False], 'STORE_RESIDUAL_OUT': [False], 'HAS_WEIGHT': [True], 'HAS_BIAS': [True], 'num_warps': [1, 2, 4, 8, 16], 'num_stages': [1, 2, 3, 4]}
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
_TENSORS = [{'name': 'x', 'shape': [4096, 4096], 'stride': [4096, 1], 'dtype': 'float16', 'saved': '', 'int_range': [], 'alias_of': ''}, {'name': 'y', 'shape': [4096, 4096], 'stride': [4096, 1], 'dtype': 'float16', 'saved': '', 'int_range': [], 'alias_of': ''}, {'name': 'w', 'shape': [4096], 'stride': [1], 'dtype': 'float16', 'saved': 'layer_norm_fwd_kernel_row.v1.w.pt', 'int_range': [], 'alias_of': ''}, {'name': 'b', 'shape': [4096], 'stride': [1], 'dtype': 'float16', 'saved': 'layer_norm_fwd_kernel_row.v1.b.pt', 'int_range': [], 'alias_of': ''}, {'name': 'mean', 'shape': [4096], 'stride': [1], 'dtype': 'float32', 'saved': '', 'int_range': [], 'alias_of': ''}, {'name': 'rstd', 'shape': [4096], 'stride': [1], 'dtype': 'float32', 'saved': '', 'int_range': [], 'alias_of': ''}]
_PARAMS = [['x', 'tensor', None], ['y', 'tensor', None], ['w', 'tensor', None], ['b', 'tensor', None], ['res', 'scalar', None], ['res_out', 'scalar', None], ['mean', 'tensor', None], ['rstd', 'tensor', None], ['eps', 'scalar', 1e-05], ['G', 'constexpr', 1], ['D', 'constexpr', 4096], ['BD', 'constexpr', 4096], ['IS_RMS_NORM', 'constexpr', False], ['HAS_RESIDUAL', 'constexpr', False], ['STORE_RESIDUAL_OUT', 'constexpr', False], ['HAS_WEIGHT', 'constexpr', True], ['HAS_BIAS', 'constexpr', True]]
_WRITTEN = [1, 4, 5]  # tensors the captured launch wrote: its outputs, written in place
INPLACE = (1, 4, 5)  # so the tools restore them between runs (examples/README.md, "In-place outputs")
# Values saved from the real call (torch.save, base64): the task is one file, as the sandbox binds only it.
_SAVED = {'layer_norm_fwd_kernel_row.v1.w.pt': 'UEsDBAAACAgAAAAAAAAAAAAAAAAAAAAAAAAnADsAbGF5ZXJfbm9ybV9md2Rfa2VybmVsX3Jvdy52MS53L2RhdGEucGtsRkI3AFpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlqAAmN0b3JjaC5fdXRpbHMKX3JlYnVpbGRfdGVuc29yX3YyCnEAKChYBwAAAHN0b3JhZ2VxAWN0b3JjaApIYWxmU3RvcmFnZQpxAlgBAAAAMHEDWAMAAABjcHVxBE0AEHRxBVFLAE0AEIVxBksBhXEHiWNjb2xsZWN0aW9ucwpPcmRlcmVkRGljdApxCClScQl0cQpScQsuUEsHCPJOFLSXAAAAlwAAAFBLAwQAAAgIAAAAAAAAAAAAAAAAAAAAAAAALgANAGxheWVyX25vcm1fZndkX2tlcm5lbF9yb3cudjEudy8uZm9ybWF0X3ZlcnNpb25GQgkAWlpaWlpaWlpaMVBLBwi379yDAQAAAAEAAABQSwMEAAAICAAAAAAAAAAAAAAAAAAAAAAAADEAIABsYXllcl9ub3JtX2Z3ZF9rZXJuZWxfcm93LnYxLncvLnN0b3JhZ2VfYWxpZ25tZW50RkIcAFpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlo2NFBLBwg/d3HpAgAAAAIAAABQSwMEAAAICAAAAAAAAAAAAAAAAAAAAAAAACgAKABsYXllcl9ub3JtX2Z3ZF9rZXJuZWxfcm93LnYxLncvYnl0ZW9yZGVyRkIkAFpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWmxpdHRsZVBLBwiFPeMZBgAAAAYAAABQSwMEAAAICAAAAAAAAAAAAAAAAAAAAAAAACUAJwBsYXllcl9ub3JtX2Z3ZF9rZXJuZWxfcm93LnYxLncvZGF0YS8wRkIjAFpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpa3Ts7O7o7LDvMPDA8cztgO+Y7GDxFPI48EjwaPBI75joMPDg8QzpXO0c8HDwoPEg7+zs0PPg6HjyPPCQ8wzvpOwU8pjsmPF07gDrpO6s7hTsJPP47mzxtPJQ7Qzw8PGg8EjwjO6I7/Tu0PE46AjydO/w6pTvSPL88QjyfOkE67Tu9O1g8VjpCPJE8BTz6O/Y7ijtyPF06YjvkO4w73jtUPH48WTzSOzY79Ts+PF07CjxLPCs7ljvYOzc7JTwZOwA8vDtrPBA85jpgPFU8YTwaO5A81ztyPJU7rzt+PDs8NjxzPEI8zTtBPGg7QjwUPNM7MzybO4c7qTtnO+M6QjzYPAE85TspPNc6DTz7O1k8tDsEPLg8Bjw6O0A8+joXPDU8WjybO4I8/jlRPIw71zxKO3A8bTviOxA7TjwqO149VzsTPEE8FTwdOkI77DqLO2Y8qTsCPEM8Lzz+O/g6MTzVOqs77DsEPGg7zjsIPKQ8BztYPEU84jqgOwg80TtKPBA8pTwxPBQ8pjwMPCE8vDvwOxw7TzwpO+E7Hjw5PGs8Qzt/O0c7gztwPKE7FD3QOzU8kzu4PHU7ADtzPFc7KjwyOzs8HjvBO4s8SDxWO2E8djqdOhk8FjxqO107+TsOPE08JDwEO248lztvPDQ7szutPCg8vDsPPHY8kTuFOyY8pTt8O+w7mztlPIY8BzstO0Y8MzxsPEs8BDw+PIk7NDz6O0s8CDzROiA8pzvoPN88XDuYPMg7cDvbOxg7GzsbPH486jpkO3U8DDwhOyk8tTtlPJ48bjuTPAg8hjwHPOg6uzs3PF47TzuWPBs8YDzEOqg7bDzMO9k5SDwPPO47dztWOyI8LjwZO+Q6NjwkO787PzxUPKA7tDu0Org8PDwOO/U6YztmPPU7sTsNPEA8yzsUPK48pTtXPME7GDwsPI88HztJPIA8dTsgPMw7cDvbOi07XjwlPJw81DpeOss8fjtfOlU8tzsTPEo89jsFPL06RDzOO1A7HjwkPHo8vDzsO8U85zs/PBs7Tju0PKc7+DuWPNU6LTwtPJM7yzvFO6U77jsmPF88FDuOO446Pzz9Okk8VzwIO407LzwUPGM7kDtiPIs70TuaO147bDx7PA48Wzz6OzY8qDtFO2g7JTxPPH475zmbPC48Azy1PL07bDv1Ojw8fDrqOq47YzwfPUU7uTtzPIc82TsHPHU86TtMO7o8Ajx0PII8kDyAOzI81DsvOoU8LzyKPFo8vTpTOwI8ljsLPNE7IjuzO4o76DtSO+U72DsnPD882jvWO7w8AzsdPDs8CDwPOxg8JTyIO+86GDtyO0E8EjyROiM8PjxwOyM8dzv6OoI7JjsKPEo7YDxcOz48KTzrOtw7ijo7O208+TsIPLA6ETx6PE877jtcOzQ7djsuPE07GjyZO247CTy5OQE8/zqfO/s7CzymPEk80zp0O887ATy+O3k8JjxzOos7sDrAPEs7bDzkOn06LzxOO/U6MDxYPMM6jzxUOyk8aTtuPDw7OTyFO0Y81TvJOxI8ozqUPAg8nzurO8A8mzs8PDg8QjxqPA08Fz02PDI8nTp2PFo8SzxMPPY7pzsePNI6JzwePHM8BD1NPGo7czs2PMQ86jp6OzU8DDwfPA08VDxfPF47Zzu+PKY75jupPBM86zseOtE7PDwBPMY7rjyqOzY8GzywOwg7KTwOPPY8gzuOOgY7QjwuPGo8BDonPAU8JTwoPPU6FTyiO1g8Nzw8O0474DsTPK47oTwiPCE7NzwRPD48gDtfO+o6/jvnOsA7KTqWO9g6bzo7PKM7Kjz1O188wDuAPBo8rTzhO847JTwLPMM7rzzZPDg8RzwAPMY6FjwCO+08XjzPOrA7zDw5POk8QDzxOqA6ODoGPX874DuZO108JDyiPDo8KTvQPHc8UTs7PAg6OztbPBc8YDpoPIU8HjydPKE8PjtWPDE8tjzHO0k8LDs6PK070DzWOyg7hTx1PFg8AjxqPPQ8MDvuOhY7uzwmO387oDvjO4k8eDuqOys8bztOOyQ7czscOw48jzruO1w85DtVPDw8bzw4O7Q8zjolPIA8JztQPAA8LzwWPKU7zzq5O3U72jtNO207iDzWO248QTvsO3A7fjxSPFw7DzywO9w79TroPBw8jjrQO8Q7Dzx9O9Q6YTsNOz88ojupOxE8Kzw8POM7WDz8PFU8CjwYPDI8LzsFPH08MDxJPEQ74DtKOlc8iTyUPPs6KztqPFQ80zt1OkU8IjsWO148ZDuUOgM8MDsbPAo8PDxiPNo7cDyIPNI84jv6Oy48gjx2Oxw8kzwMPXM8zjrMPAM8dTy3O088DTwgO6479jpLPC08oDucOoQ7Njz8OYU8HDwaPAI8ZDtzPEs9nTutOlw7ADvrOvk7jDx3Ozg86jsKPOM7Kjw9PPs7WTwNPA08FjzxOwg8BTy8O0Q8dzxpO3M7wzwEO3g8Szt9PHo8XjwiPEM8xTy7Okc8TjxMOlA72jruOus7Cjx3PFc8ITwoPI083jvhO3A8dDw9POg7VjsePJ08BTx1PNE7Jjv7OzU8XjzIOmQ7xTubOyU8czs1PFk8ijumO7M7bjykOg88UjshPF485Dw2PPQ7UzzGPJ470Tv6O688pTy3OsU6ATuZPHA6DTx5POA72Do3O2I7ajzeOQg8iDsHPDU88DssPKM7nTuyOyU7RzxkPEM9UzyiOxg8MDzyO2U8GjtZPO470TvTO5E8JzodO/Q7tDuIO8k8HzzfPA464jpCPAE8MzyWPNI76DvLO6c8STwEPDo8KTwNO2I87TxrPCU8aDuaOkc85TsFPCs8hzzOO4s7cTxFO608ejy0Oxc7tzoSPBI8qztMPEs8WTvrOuQ7JTx6Ox08YTtoOxg8IDzqOQ07GjvQO9w7xTsrPKA7Mjx/PN06cztGPAU9QDv5OyE8HzxqPNI7HjvUOzs8CzxjPGA8Ozx4PFw7MDuMPKE6bDyPO9Q6kjo0PIg8aDugOok7BjvAO2A8ITzIO3M7/TsHO+87FTzwO2o8JTxiPHc8tDtTPCM8XDw1PDY7MjwkPCY8ZzzBOnw7cTzJOxQ8HTxfPAo8MDs3PAw8iDvVOxo7IzupPMw7njuvOhA8uzt6O8g8VTzSPBI8HztzPAw8PDyEPJw78DumOwQ8QTsSPMM8szs3Ozo80DsVPEM8GjxlOwM7uzt9PG48ujq2OwQ8KDu+O288GjwYOS88ajwuPGI7Vzx5O7M7CjyCPOE7PTtnPL47PzyhO6A8VztbO3w8HzvQOw07LDxhPH47WDuGPLU8XTuHOzk8ETyIPLo8wDu3O6A8HDyoPMk7ojw0PLw7GzwgPKU7JzwTPP07ojwwPCw8Hzw8PPI6VjwyOy88HD0DOzk8MDymPNc7FzydO8Q81zoZPJI7yDpNPAk8Pzs8O1c86juFPPY6Czv4O9w8uTuKO+46HTw6PNo8MDuwOuY7tjyeO7g7PzuMOyI8SztdO9Y6PzxfO488pjtDOyg8pzs5PP475Du6Ozk8Zju3Ozg8jTsBPCw8FDu+PBU85jtXOzw7LDwmO2M8CzwEPEA8eTsIPJI85TtzPCI8wDs/PYo7gTs2PMk7mDwsOlw8MztpPJA8UDyDPBE8CjxKPAQ7ejs3PDc8hjtuPBk7GTyoO+I7LjxaO5w7UjwbOzw8mDt8Ow47XDvPOjU87DtPPGY8nTx8Oxc80zsSOnE7TzvrO+g6oDzWO6s8ojwbPDU89DubO5c8YDzIOkg82jlZOx075zvbO3s8Bjw/O/k7GDzVO846+juEO7I7ZzxlPNw7LTuwO+A66zucPIg6nTxIPG07vDouO+A85zsIPAo8GDw2PHI8QTuwPOY7DjwaPQg8ajqPO507XjyaO+w6tjsEPIY74ToUPBo8yTsBO8o6Ujw6O0g8QDxEPIk7azw6PDY7gjymOzk7qTuaO/A6gjwcPOE7pDoyPCg70DsUPAw8FzzdOyM8gDoVPO47ADwOPF47QDv8Om88Pju5O6s8fjwRPBo8TjwZPEc8EjyCPEA7UjygOy47OTxPOw08xTsGPDQ8vTkHPNg7UTzcPHY7CjxtPDw8nzweOuw7NTzxO987CDwuOwA87zs4O088JzwgPHw8VjyHOyE8ljtAPJc8/jusO9Y7PjuiPGE8hjwtPHo7mzzFO248xzsqOxg8FTxWO4072joePGQ8xDxGPCA8CTxKPKk7RToOPCc8VjsBPBc82DoMPDA8KTp0O9w7DTwfPEc8ZDyjPEQ8EDwrPFw8DjziO7g7UDwGPIA7AjxbPGo7gDoxPH48gjpPOzU8HjxPOzk8azv8Oxc7bDuPPAs8VjvCPKw7UTxXPKk72Tu0PMA8EDp+PJA7ZDwrO548PjwoPIo7HDvbOzU7cTv3O+o6BjyjOyc7TDxrOp07SDxaPJQ7jDznOuo6BTw9O4Q7+juEPAo8UTyQPDk8qDtgOzI8iDw1PKw73TuaO+I7RDyLPHk8CTxZPCk8Cj1vPPw7XDsMO6o76ToTPJ08zTtqO3k7bTu5O1Y8TTyoPHc8OzwSO0w70jy6OwM8FTwtPKI69jtMPJA6WzvSO8w7NjsmPFY7xjsBPG88SzwXPGQ8vTs0PC88jTwaPNY8uDz0O9s7ODwkO048lTyXPBU8AjwbPLs6XDyLPBg8njvDOzM8EDwvPEs8Rzs9PDE8DT0wPFQ8BjxOPLw7LjwEPC47BDzzOzQ8czuFPFM7DDwSPPs6KTyfOg48dDspPJk7zzoNPBY8BTw/PH08YjzKO607EjuGOyI85juJPBw8MjwXPAc8ETvpOlU8IDy4O8I6tTsnPLI67TtAPHs6WzyoO5g7FjsYPDg8eDofOyc8gDvRO6E7AzwuPBc85jruO+I7wDvOPIw8BDzYO5o7EzwLPFc7pDu+Ojo7Mjw9PCI7wTxtPAE7hjuVPBg88jocPLs7ajuoPOU5PTwqPP06pzxaPGw8ODw9OxA8PjwiPDE7jDysOsc73juHO3U8/jo4O8U82DsRPOo7WTxBPMg6BzzTO3A62DpMPOE6AjxSOuY6Hjz6Op871zu+O4A6LzwDPCY8ZjwiPF08LDyIOkI8gjrJOig7XjzpOmg7GjsHPBE8qTq8PA88tTwhPKo7BTyhO848+To2PIc8SDwyO1M8+jpGPKI8QzwDPE08fTwaPDs8LjyHO1E7WDx1PN87kjuJPEI8xzuEOhw8ETwOPP87PTwlPEk89TtFPKg7pjvXPD08JD16PHA8RTxkPDY8HDx2POc8UjwyPOs6FzxSO447rzojO906ODy8O7M7FzxIPHs8LDzAO3Y7Bzt2O9I6CzyTPAA8SjqKPJQ7Ojs/PAI8kjqgOTI8IDwNPLg8uTvWO1U8aTxoPGM6BjwmPJE76jrFO2Y8/TvcOhc8iDyCPMo6NDpqPBA9dzrrOyo8xztlPC08QDsLPI87NDzwOmA7CDwlPNo6YjsoO9M79jrhO9Y5BjwqPFE7LjxgPAU8nDudO287qjtuO1478Tv7Or47jDyYPL48kjzCOxg7zTqbPAc8XTtRO4A67Ts3PNk7KjwOPEQ8azzRO1s7CjziOx48qDtaPOU7FTyHPEA8ADwaO2o8HjwtPGA7VDxgO+Y8GzzvO+w79Tv6O3Q8XzyZOwU8bDsPPCo8ajuuPN86oTwvPFA8Qjv9OxA8YjqPPGw8hzx8Ohs8RjsGO7Q8RTzaO0s8DjwiPPw7OTwMO0A8yDznO/A89zwWOic8uDwFPIc7wztUO0k8FDokPBI85zvPOu47ODxTPKg86TvmO/o7ijz7OiY7yTwlPOY7pjt1Oxg7Djw6PCY8JzzdOrY8Xzv6O1g8ATycPEA8QDugO0Q8GzzSO9o7gjtOPKE7uTu0Ojw86jtwO346XjzDOhM8JjzbO8c7eDuYPAM81Dy5O7k8bDwPPbI7MzzzOwI8XTv9Oq07WjtRPV47ODvQOyk8STzbO+47GzwSPCU8dDsYOrI7MjsCPCE8STsQPAk8NDvJOsI7EzyoOtA6UzyfPN86BTwBPK47szpoO+87dTxuPBA8BjwSPPU7hjy0PIQ8vToaO147VDw9PPU7tDytO1Q8CzydPA87SzydOhY9GDwNPCk8cDy0Oxc8xzuiO/46YTxaPAQ8gTwxPJo7lzupO/Y79Dt+O8Y6vTupO3476DsPPBw7VTxnPCQ8jTt7PJU8BDw7PAs7ozvYOyI8AjwzOlI7njurO1Y7AzyTO2M8NzxVPMo7NzsdPJ07MTxcO0k8TTxIOyw8ijt1O0A8FjouPBQ7BDxcOxI7qzspPH06DjzPO0I6qzuhPDc8eDuaOj48ejw6PFU7izuQO3E7yTtAPBI8GzsgPO47aDw6O4A7NjyCPBo88ztfPBU8BjxiPBo8+DsiPJo8mTwKPAM8HzwFPDg8BTwKOwc8VzzyO4c7lzxRPOs7DjxIOy08lDvzO7A7KzuBO2Q8ZjwfPCI8LDxSPI48QDsCOy08mTy5PPI7JjyiPNg7aTxhOnc7pDuWOhg7xDuCOyQ8ljz+OwI8AjudO2g7lDuWOxY8Vjw3PHw7LTx9PIM7Bju4Ogs7DzwVPN47QTzBOic7YjwfPPE7Bjy0Oj88oDw8Oyw7ZDq4PDA8YDyvPEE8TjzuO348vDz7O1A8KjwQPCc8tDxnPFA8DTuyO1U8qDpKO7Y7izyDOic7VjwkPNY7IzsbO408VzsiO7A6fTu0PCY8UTxxPC47zDo6PGM7FjskPB88gjpvPK08IjzuOxo8/ztSPF083DrMOik7ZDwAOpQ7ITuWOjw7jjtkO8s79zuZO507JjycO3g8oTtbO9M7xTzZOys7CzydO0I7kTybPCI8KzzNOng8PTraO408pjsDPB48NztaOxw7zTvJOzw8kjoCPEM8Tjy5PEY8KTybOzw8yzoKPJQ7SjwyO2Y7gDykO5Q7oTsQPCA81DuOOzs8jDztO/A78zsBPRM8ATx+Pa48YTv/O1A8CjylPPY7ODvGOnA7TTyRPDg8QDziPAc8XjwEPLY7PjxuO6k8VjwyPWQ7NDyJO7s8Pju7OxE73TtcO3I8tDtUPHw7bDtWPII7pzswO3w8UDzDPK07KzzcOk08CTwBPKs7hjyIPDs8FDvyO1o8HjuQO0s7OTxWPCI8BjyIPIs8JTxbPCQ7dzo1O7U7WzwXO0w8FjxzOzE83zvvOzc8RTw8PEU8LjygOi08DDysPH08NDuaO7U7eTxxO9I7lTvaOqY7oDx3POg73DsvPCM81juDPH08fTvgO5g6OzxOPAs8DDwgPLU7DjyyO/w6kDs1Oxg8IjxGO947ADyeO2w6BDxAPJ070zuCPB08wDrOOzc7OTtgOw88pDszPA48Qjw5O2w8WDt9O/47hjsdPDQ8SjtxOzo8FjwmPPI8sDxqOwE8oToyPOE7iDuhPB88pjsgPOo6JjxePCg8RTsCPQY7fjuXPJw7qTwqPAY8ozxSPBE89DrmOhg8bTsOPBI8rjwHPH47YTwAO2I8VTsQPQw8WzzVO+U72TsPPEY8NDzVO5c7VjzxOww87zsiPEo7SDvnOp88jjvoOxg84jszPJw8NDxyPC47DDx9PHc8PjyuOzo8ZTyVPJ489DvAOzQ8ETt0PG46dzwLPFU8ljtqPM06GTp/PMs74DsWO447kzyBOzo8ljstO747LDwlOz486DuUO1c8PjwuPPY6rzswOuk6HTwFPOI7vzt7O1I8AT0kPG87LTxaPDI8TTzsPOg6jTuuO+k8LjrYOjY8IDvqO+M7tDvXOwY8cztMPO072jsUPFM81Tw3PF86fDxoPAY8hztuPFQ7rDstPCc7+DsEPLA8OzzaPJ87ijv8Owo8MDvNO+A7oDszPMo6CDsJPZw7oTwcPMQ6EzyXO0M7SDoTOys83DwBO9w6LDq5PGw8bzxdO1887juEO7w6nDo8PGA8XzwJPJQ8aDuZO0o6Ejy+O1U81TvSOhs7YDyZPP07YDvcO0A8CzwqPP07UzvMO3o8WDssO8o7bjxDPCU8Jjy6OpA7UTzhO088eDwCPDY8cjvIOwU7Hjz8O387ZjyjO7w8/jtYPOM7lDyhO0c8wjtcPCg7FjuRO0w7hjzfPCU7wDqlOyY80jtYPNw7Nzw1OyI8UTwIPO87ujzkOjk8CTzCOhY87TumPFo8YjuGPPw7jzvhPKo7cjzTPIU7rDrqOmA7TDvMOj87PDxtPPs6YTxSO9U71ztbO008Ozx6PNI8vDsIPB47izzkOu87Szy1OyM88zrOO6Y8MzyZO+47bTu2O1I8VDwyO8w7pTvyO1A8gTxFPFU7DTywO1c8kjuDO3Y8dDsTPJ88ejzPOhw8BTyYOqw7IzzJO4g7FzyHO0M8pDxnPPs7eTudPJU7XTznO346FjwBPL47mjrnOzI8MztnO4c6fjy7PMQ7rjyFPFs8IDwPPK47RTt2O5U7BjygO5w7mjo3O907FTvxOyk8/jpOOxI8NzwzPAQ8GztPPNQ6hDuyO9s7jTvgO6E60zsyOyY8EjyqPEw8gzuAOxE8CzzwOo06DTuDO1w8JzyhO+k7CjymO3I8TjuYPBE6KjugOqs7mTqyO7Y5uTsJPPs7WzpFPBA9gzwSPC88UztrOxg8ITxfOzE8ATwdPJU8VzshPJk77zvtO4I76TtlO807PDxBPKg7mDo3POU7djyNOxc71zvgOus6qzutPJo7LTzqOng7MDxjOws7gTzXOiU8SjtVPLE7YDyLO288dTyeO4Y7GTt4O1I71zsmPBQ8+jrDO7Y89TxAOxs8WTtWO0I8hzwUO0g72jthPHQ7hTxzPO47sDusPD48KTtrPAA8LTucPIE72DuQPPo6Szx4O/46JzyROW87BTveO5s7UzwgPJg6hjxOPHk6ITv+O9Y7hjsMPEY70Dv5OiU8eDxZPBU8QjwgPNg7ITv8OvA6lTxoPJ87njrAPIY78zwvPBc8SDrlOlI8Rzs7O3A8UzwXPEQ65jt5PBk8TTuEPGI7uzusPBs8ZDyHPCA8+DscPLE7NTz0Ors7ITwJOoo6hzzEOxc8xTvJO6c7dDyWOxQ61jq0O5k7mTxMOw08MDzEPEg7dTyTO3Q87Ts2PLI79zshPKc7kjthOyM6yju6O+w7/zs+PHA8gjtrPBM8wTz8O2w8RTsBOxc8zzo0OxE8oTvOO9Y6TjvYO4Y8JTnkPKw7dzsXPBI8MjwCO3c8Djx2O0w8DTxzPDY8Mzy9PBU85zufPCw88TtcO4Y7ljvPOxc7+DuDPOk7ODxYPCM83jtzOxM8HzznOxs8LDysO1A7BzvAPLc7szv1O+A7gDxMOzc8XjtJOx88SzySPMY7jjvVO8s8/zp4Oyg8WTuyOx46gzvgPPc6XDysOn47kTw8PC48JjwsPHA7Ojw4Oz87NDxaPLE7/juTOsw7RzxuOt88PDy3O6A6AztnPLM7/DrwO1o8zzovOx88kDxCOww89zrBPH87iTxtPCA8JjxeOmo6ujrIO3o7rTucPAk7YDwqPTg7cjsKPEY8CTzFO188UzuqOzw7vzvPO2U7RjwMPKo6rTwHO4c86Dr3O/A7IjpSOx47ijsRPD08GDuUPD08Bzy5O9Y6xzvFOvc7pTooPPE8YDsmPLQ7MzwEPH07kDsQPG877Tn+Ons8/zqCOjU7pztiO8g6ZTzeOmk8wTwkPOA6nzsCPOk7VTsIPDU82zu3PKA7hTwQO707ljxpPFA7SzyaPOY60jtGPK47ujtrPDU8TjxRPCw8izyYO5Y79Tv/O2M7dDyxO8Q7Ajx8PFs8kz1VPNg6AjxKPJU8VDyyOxE8WDzMOm88Hz05PFU7Izw9PCw7BjpNOz08lDynO6I7VjyRPFA8XTuPPBc8azzQOzk8Fjw1POU7szq+Ox88jTuMPP07kzsqPD07KTwKOvs8SzxuPMs7WDwxPF87ATyyPEw6GDu1O8U7uDsyPDA8GzxHPC48XjxAO2I7hDw0O4s7/TueOyA8JjxrPKY7zzziO7c7BTzYO/o7ATzGOiw84Du2O+Y6DTwZPAY8PjwpPNU6vTsmPH87tjpDPCA8WjwvPMY8nDsEOv07ezlYPOQ7LTwoPFA8RjxYO5w6Xzs4PB48jzxWO946xzsWOxg8zDunOyw7qDsIOoE8gztTO5M7BDymO/c7rDzpOgI7zztHPOw77zq9PCs8mDvyOxo8RjyeO487CjwYO4g7+zpnOx485TvDO4Q8ozsfPCc8VzuLO607yDpxPAg8LTxxPEc7CzwQOwY7fDzWPCk8GTwxO8I7DDySO6I8zjrKPBw8+DocPKU7qDwjPPs7ETwIPAU8YzyAPJ87dDsHPOs7pDtTO7E7mDvdO1Q6MjzkOik8sDoxPKc8VTxhPIk8tjtRPGk8GjxPPCE8Xzs6PC08QDyEPLM70DsPO0g78jsJPCY6hDxgO4M7IDqKOyI8VjukO5o7hDscPHY8ETw3PNQ7cDtAO0k8fTwQPLk6lzwjPB87qzxyPAo8HDs6PMc8ADzKOkQ80zrwOwg8qTvEOuk71DsPPB09EzxoPLk7nDt3OwA8YDoLPKo8LTv3Oic7wzsOO7g7mjsIPGA7GzsrPFY7PDw4PDM7gTz8O3Q8LDyNPE47hDtQPCc8cTwlPBs8fTz4O7I7tDsKPFU8ejv/O8w83DuSPMQ7PjyEPPI8CTxZPBU8mTwkPJ87nDyjPAE8kzsCPII8dDtkPHY7ozySOyM8kjvYO608TDu9PCI8CDwcPBQ8XDt8PII8Yjx3O8w7bTw3PIw75zpEPBw8lDsZPCw8DTwhPIg7bTtsPEQ8ojpOPL48xztQPCw89DtLO/s7HTypO+w6ojwkPLE7PTxGO8Q65jogO7A6XzzgOz08+js4PBg6gDv0OjU8mDySOys7ITzSO608EDygOrg7zjzXO008mTyyOyQ7OjyWO7A6ajqUPCw79jvbOxU8/jrgO5g8PTwTO/M6MjxQSwcI2NH4hgAgAAAAIAAAUEsDBAAACAgAAAAAAAAAAAAAAAAAAAAAAAAmACwAbGF5ZXJfbm9ybV9md2Rfa2VybmVsX3Jvdy52MS53L3ZlcnNpb25GQigAWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWjMKUEsHCNGeZ1UCAAAAAgAAAFBLAwQAAAgIAAAAAAAAAAAAAAAAAAAAAAAANQAbAGxheWVyX25vcm1fZndkX2tlcm5lbF9yb3cudjEudy8uZGF0YS9zZXJpYWxpemF0aW9uX2lkRkIXAFpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaMTU3MjgxOTk1MTE4NTQ2NDMwMjYwNjQyMDEzNjgzNjY4MDUwMzMxNFBLBwjJ7e4RKAAAACgAAABQSwECAAAAAAgIAAAAAAAA8k4UtJcAAACXAAAAJwAAAAAAAAAAAAAAAAAAAAAAbGF5ZXJfbm9ybV9md2Rfa2VybmVsX3Jvdy52MS53L2RhdGEucGtsUEsBAgAAAAAICAAAAAAAALfv3IMBAAAAAQAAAC4AAAAAAAAAAAAAAAAAJwEAAGxheWVyX25vcm1fZndkX2tlcm5lbF9yb3cudjEudy8uZm9ybWF0X3ZlcnNpb25QSwECAAAAAAgIAAAAAAAAP3dx6QIAAAACAAAAMQAAAAAAAAAAAAAAAACRAQAAbGF5ZXJfbm9ybV9md2Rfa2VybmVsX3Jvdy52MS53Ly5zdG9yYWdlX2FsaWdubWVudFBLAQIAAAAACAgAAAAAAACFPeMZBgAAAAYAAAAoAAAAAAAAAAAAAAAAABICAABsYXllcl9ub3JtX2Z3ZF9rZXJuZWxfcm93LnYxLncvYnl0ZW9yZGVyUEsBAgAAAAAICAAAAAAAANjR+IYAIAAAACAAACUAAAAAAAAAAAAAAAAAlgIAAGxheWVyX25vcm1fZndkX2tlcm5lbF9yb3cudjEudy9kYXRhLzBQSwECAAAAAAgIAAAAAAAA0Z5nVQIAAAACAAAAJgAAAAAAAAAAAAAAAAAQIwAAbGF5ZXJfbm9ybV9md2Rfa2VybmVsX3Jvdy52MS53L3ZlcnNpb25QSwECAAAAAAgIAAAAAAAAye3uESgAAAAoAAAANQAAAAAAAAAAAAAAAACSIwAAbGF5ZXJfbm9ybV9md2Rfa2VybmVsX3Jvdy52MS53Ly5kYXRhL3NlcmlhbGl6YXRpb25faWRQSwYGLAAAAAAAAAAeAy0AAAAAAAAAAAAHAAAAAAAAAAcAAAAAAAAAcAIAAAAAAAA4JAAAAAAAAFBLBgcAAAAAqCYAAAAAAAABAAAAUEsFBgAAAAAHAAcAcAIAADgkAAAAAA==', 'layer_norm_fwd_kernel_row.v1.b.pt': 'UEsDBAAACAgAAAAAAAAAAAAAAAAAAAAAAAAnADsAbGF5ZXJfbm9ybV9md2Rfa2VybmVsX3Jvdy52MS5iL2RhdGEucGtsRkI3AFpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlqAAmN0b3JjaC5fdXRpbHMKX3JlYnVpbGRfdGVuc29yX3YyCnEAKChYBwAAAHN0b3JhZ2VxAWN0b3JjaApIYWxmU3RvcmFnZQpxAlgBAAAAMHEDWAMAAABjcHVxBE0AEHRxBVFLAE0AEIVxBksBhXEHiWNjb2xsZWN0aW9ucwpPcmRlcmVkRGljdApxCClScQl0cQpScQsuUEsHCPJOFLSXAAAAlwAAAFBLAwQAAAgIAAAAAAAAAAAAAAAAAAAAAAAALgANAGxheWVyX25vcm1fZndkX2tlcm5lbF9yb3cudjEuYi8uZm9ybWF0X3ZlcnNpb25GQgkAWlpaWlpaWlpaMVBLBwi379yDAQAAAAEAAABQSwMEAAAICAAAAAAAAAAAAAAAAAAAAAAAADEAIABsYXllcl9ub3JtX2Z3ZF9rZXJuZWxfcm93LnYxLmIvLnN0b3JhZ2VfYWxpZ25tZW50RkIcAFpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlo2NFBLBwg/d3HpAgAAAAIAAABQSwMEAAAICAAAAAAAAAAAAAAAAAAAAAAAACgAKABsYXllcl9ub3JtX2Z3ZF9rZXJuZWxfcm93LnYxLmIvYnl0ZW9yZGVyRkIkAFpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWmxpdHRsZVBLBwiFPeMZBgAAAAYAAABQSwMEAAAICAAAAAAAAAAAAAAAAAAAAAAAACUAJwBsYXllcl9ub3JtX2Z3ZF9rZXJuZWxfcm93LnYxLmIvZGF0YS8wRkIjAFpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpapqy7rN2piaxvrPmhKitNLPGcEKITpgqlEizIM0wqx6m6K94pxiXDLbsUeCnOKeGsdTBXsHEvzDADLUsjD7C6sJQlrqncLKSalCtDqSMp0KogITctYilxrAMb1S8prIIsqC6lpBQu3bK2njGwvB/aKxCumS/Vn+KuV7JEJpSv162PsJY0dq4zLcwq/C8yL2stXzDmMLYtHSmFMGyytS90KpcqIyoZrIwh0SZlLRktz69gqwOtQCtxoXwwSC9KJDku8SWHLVIvCyxYoT+xzqu6meueSq8uKiUZJSv5peSmla5oJK+fT7J/p+WMaa45q1gheiQoI9kvlhlrs0Qt0y7Pqz0oUSgXK/Se5yyDKFurDzINp3UuqZZIsoSvgaizr3QvcrLoMEuyFKpbLESoIaurMjCx0S56Kpip+q/sm9gs17AJqVQx6y1OsZ6p7qUxrPyoczTVqsYtTK8rL0QqB68Zrr2zii4dqVKpASZZsA2tFKmnLQKXeiyFpiMvnqdRF9CvlKzVsFgkWqXOosYsDjJgLWqtXpwcphSqcScvLDwaCLBkMCgwvrDor0OkebKULCwjeyyJJ0Qs96k2MkAp8iuwpmGlPSopLPeh1TFNKyCe2SWUmSYuy6dHJHmxNC0Jq4IstykAKaewR7D8J8iuXqjYpJYLXDHfETsukTDlJROtuqwArRas0Sp5qciqmrCUKkUh6iDprWMsgjJ2qnmrpLD/H2CmmqUtLzMuoyi1rP6nc6o9qhmkO68Jq2cs/qi+Fvws6i7kK/sk+aOLLfYkFC0Tsdas3CiwLwWr6C9ZJuOjPzGyLgMOqi25MEeuVjG4sCekQCEWMFgwOiQwnCEp5ShJsJCuVq49o0okGyyjpmeu2a5JLEEKAx9/pSavC7LoLnkxuqg9Ky8tN6Uyo5MfxScjrIIrJigisLEuyKaTpQwdSTCbpRIqN6atJ6spA7GpMe+vejCsqmSjy6cfLGOu2izwpZutZi3Cq2wqv643LWk0+ynvrFUlAa/5LYIl8SnJLDas1xQ2LrunCjAtMRosfZzDreScnyD2KwyvGCfep4Mcr56RLIasybCRsB4olq2xI6mtvrKVJ7StwR+AtIsuICqvsRWlDjDtHb2unSmvLO8qFpzlMI0u36hdqSsdNyhtsFUuCy73qKedN5hyrIIpDTATLiCwGKyTqQ6tOCBIq4Yu3yFVJl+gVSr7I+Ix+qZPKzApBq4dMbWwNq4PKE8vFTE6Kq4p8a06qe0wIi+BsM+s+CLaMa8hya7VJyStHymaLsUtMTA5KbmwFi0Urh0xZy3SrMAx4KV7nrqsmrG7rNssUitILs8rjyBpruWxRiyipswsVC3ZLF0o1CxJI9ew8ypXLgYn1zGpopklSqruqCmtb7CrLc8aC61RrEMlXSynLXmsmC2OKs0u3pqDrO4vQ7DPMagijTDGrIEsdif/oH0v9Ky/LDGuI6r/p4Yu8SvfqWokHbFeJEagl66BLlcvMK2wqiapJB9RJqgwfLJpq6GoySu+rNgpXCo5Lfqu0SxRKDcogC19pEcx2SqvqpKwYzGkLpKsS7JQp6GrMaQhI3qpm6l0MLU0TTAQHIarIiN1Jj2oNLLtJz+qOyHKIO8sKasmrfqpRixlLK6vsS/7L6YeUi+SKRSwjxxesAuc160Rn26s3isOLpKvaC7KLM0x4SQopskw/KnTMD2nWK6xrIcojqqwKcKoBSryrgCu9yfpooKllSDvLXYqcxojLYKwCSl6qY0szyiBLccsWKwFpA+u2qyjsTauaLECqgMyxqQ6qbywAK0DqYWfFC0+MTIrcK1QLJ2xZ6iBsP0uw6fEseAsYicDKZEpBZxjIjAv+CjRqZAqKiguLYWmF6vrsLCpkCmpnkSoyDG0LKepTC1AI3ygWq12J+OtACFWozgkSbEPpJ2xNTETnEOrfC5KMCqvxKnGp9SqMx11r9EtBqVaMWSxbiQEr8+tuiyXFf4oHR4fqNgrOC+rIn8stiiPLA2rObAnLlcoPygvpNuplqhPMBKzDCx8KfkozgjOsP6vHB7KmNytYp7ErekpvCo0KgYkkrA6naAp3Sz1moEx/CmSqsSlkahlKB4wFCqkpmotrikUsEOuVi4JL1OvSi8dnEasci8XIeGiyCxqrw0sUC2EMFmpkKlTrK4p/i4arrOuya2OKuKmBi4PK1MPp6warxIpZDA8p/6tgKkFLkce4rGNJwSw3bFArC8tkKxQKyKiiSaqL4Gq0y4BEl4wCrDRKWaxwCp9KzSsvq6cL9imIq+CI8Wx7K0MrNCh2i1sKJgpWidmrcwmOCQhLwOgvC1dMcWt762QsFsuCS+oLBEp/CxorlIvSiZmLYmwC6vbMjmtqLGcJtms8qxqK5oseS4UpYIv8a18ItyleLO+s3cxeTIWrIiwQSxPnSyh7KeLJQAn8injJyeugKdyshqsLbEzsA+uL60iqGGmFSAWNEalUrIBq2qwkaI3pKCe+SxSqaKr1aYTI5AtwLAeMd2tRSwQo64gai+BIOMimzAkL0owRynUrssun6b2q1Ur2y3wMy6lBSyPMBCavS8wJdUoBa2nJHsurS6GMaIvgamypYgtm644KDSvVaOQLDEtRrFzsNUwTi2mLocwTqgqp08SP64fLMkv+6ijsHsvpKRTLQevL6RHK1ewMyZarkOz3izSqiou0DHLMjOyHDF1qG2uBTByMYAuuizHLLKripz9HmevdqQDrV4q4zDOLeImwatbrkutuKgNLZYpDql3qa8wCbLSozGsOS5oK86wN7BlJpUqkpu8Mhkn0q01MSwvzSGLKgYtSixEK5aw1pU4quktoTQ6sCUtFTIhMfOrL63kMicv+6vxrUYfIpc/rQQsMSoXGyqtQZ3Cq0SxPJzKpHqitrOprnsvQaYWJ16p6Cv7KuEsfamHMs0vXynPrM2r15o9LMOsYKXAJ+eycCvNq7+w5ai2regmT6BVGtCpQCf4iQ6jUSkErhOaoi1/LMqhwK9KLrsv0yoeq700ybEKIzAucyN4MG8yA6+0Kr6gDDBCskCqF6losIisoqfdLeCwpq+RKAanOSo4LXkveLIprJovbKqLMMcqdhdPrEkl7SpxLgglnyjFq0+wMiOnrNKoyy4yKIYwMq0eKTAoxTJMJhisTLCrK7ewcLEVLtSowjOdJbuwJ68ArtakA6xnJoqvRKk4qQGryylIqkIopq5psQyuQSqqMDwQGCShsmStIKgxrGEgIjGdrFAtBapVp5SouLVdrNip+67DrmwybSVMr7IqAiw8J+EuDbI0qpyqnaFTMsAnji13tBcsVaQJMjooSzH7KUGvtK12LEqyzaWNtBew2bO8M+ctBK+HqBcvzK1ILdKoSq4wrAawjKwuLFgw6DCWrP6uuJrMKCUyJCwireUjvi66KUqsfKytrZudwS+qra+lH64tqCIwG64YMpwwU7AVmjkucTGfMBonGyAQNK0yiihQLt0uHqoAsNmoA6VkL4It2aTeLVMqrK3sLTCtEymiLPgtvS5/MfohvioBL/cvFS5prC2w3rDsscqrCzHkKaIsJLHvoQCxDquorBGwiK0rsPAvTiUKpy4ujawTLYEuVydwKO+k7yxHKA4qIavOsQcwNaBdrS6t3KYMsQms2Ch+LcOh/SzwLrQtBrGhLzKtPapuseUQczLJKugit6V3KOmu2gLPLMWv9CB7sNki6qusIs+opajgIx0uajB0M8+qHxjwrs+kZSj+qp8sCqQpMC6vcKdEMbsqxay1MD0yQS3WsEAu96oopg2xsqONsoMouqyRLSQnTS04L1MyGLEsLbowiDEWJYWtP64jsqWhRqyrrFug+6dFJqEwOypRq5UdH61iIvQuQDIVsuimtyoTJ6wujjBSMnKxGCxSqNkoCSWwo5gpIqlrLvAw6zGoseSsdSerHP801KqyLJQkb5UAKC2vmawQMGUyCqYYK0qk7KZPsMyu0q0pMsOstanpp5Mq2Swyst2q2S03L+Iy6y14sTE1ga6crbKsQTDiHVMx+RjzrsuwQqLdKSYswjBNLNG0M65tpE0wwKt8p5ksdLApquKsUq92Mdiw1CrPqICx76ckJNYzQqLAqL2k9KwjoWIjdKs5nhsq0BhirrCuvC7zMgmt9q2/KBkwaZ5aMeimRq1Msb+ZMa2zMuivyS9frkeweazWsesx66QHpawtQTFCL/+sQ7O6JzcwDDOrrH0xsiWorDMwJy6YIb4tTa0LsdesBqnhKW8vhK0Kq2EsfK1graOuF6m9rQaMQ7IYJWczQzCatAitiCcFKs0rzq12LQIpT6djLBOwLqb3pLiq0hzqsN4jPZj7qP2nwTFDGbou/i+0KYaq3bCVIFmtIC8kq6gofLJtorGvLqU4LcylUSrlpy2wODCQpfsz5qcCKEAtGq4xLMeh7KX6Iwuj/jImLSw0O6gHlESza6zWrdGGPSYCsAYqUyE1sFEtBJ+msFEuhiz6o+Af2ajgrHWv0x4dpWEvgCw1JeCuAiRxouKeh6q0LeWxTx0JsE0xlCBoLrIsErDDrt6k5aqVKCipSTEwsFYtvrDHLeUu3zLwn3exaSl+qsyo07EZsUevn7OuqNMt7DD1rO2vF6vWqmMr6C3kNEIsVaGhrm0vra4MLvqumzEsL6CwBi5rLCYpqDDLLEWrVKxxqNyusLElLKYkLSydLYUsLC7pJrStt7E5qIyt6CavIPwvOSdMMROeojMJLIaaKrAaojmuXiBopMivu6XULict8KuLLnEibym3Mekk+ZwSsDYY3CtrsAUxzTEtMUYxZCZqrzmoqKBasRec7q+bmtstXCU2MAuuL6zCL6WuYp67LF8sRSsVsHqvFa5UnzyssSySqdMoy6giMWWvi7IlLu8uErHXrr4giC7lpRgklSu0GSSwwJlYrQkiTC3Us4ewyqogMB+q3CjiLnQwGC8+rzejsK1LLiEtKCwrsUgYrjCQr2stUyzoJXqnjJndMD2sMqRAHR4tpLM+KvqtmqLQs84oqq9eovSqdBpksDMst6SSrAes8Sn5Gkel8Klur/qdITGNGvQpn6OPsEWy3LAbtNWtDKJnrGOpDzCLMbuWpq6aIdSoBqZHrgyw2TBOMJycqS5MKNkyVqOzMUgwMq9aL3Gwtql5JYKjdDE7LR4wkqSLMEEyH7KwLhUsOKoxMTmwvynjKbitPizur+yuPSxmKAStrCouHwwwAqkwm58yazJhL+EfHq3YqyGgzjCEKDAkixfZrnCoESxEqImuc6+wKG4eAqqTrvkdMbB5qC2kxyxCMikuAqj/pYOkSSy6LJ2slaTwq/stS6tYK+uuYqRBr68rICiNLHqzZbLQLSWtca7zIoeoDavosDis1CaZrXSgBq61rt2xHaYisTGzE6y4Mb0uDTAHrYssK6swpoArIaWmq7ophDR+qJorE7BHLsMpJTAwp2GmfqBWLTMpayshMe2xj60GKG0uuSRILZQhVquNK9cwkDPuJYmuAylarTOvbSTysgmxYTAyqtaw3K1/qJ6utSFbMaoun6dgp88t0KpDKH6omizwHr0tTKMpL4SoHaglK0yuIjCBKvWcfSUfJe6vrqWBMQKx3CXUsA2fCTKGJCqvwbANsSelty0OMEKhYyn+J/6bJDAsKNyuMq8MMyYfAqRKrBuwYzHILn2sxS24MGco/KwPMV4rBy85LS2r2azvqTOsz68Tq++sLqewLmso4CBEqJeuEzANMHCmXaTVLKkxqrKLLkGprKsNojSxu6HLrdKq0jONpcArZS2jqcYkBCqUKlkahC7pMC0tSBtssNuujo8EL7YwUKwasswy0jGSLMurcauZoAOoNCijqd2rOyNMM7Cn9QwrJGqsfCxToi4qwheesEC0tCjGrFOmFyqErgKq4hXTIzQwxDGSrgetuJBfrMqsMKkzqx2yAzHwqJSswSSJrI6iJBj4rTolSi7QsZgtrR5QK8+sKKmNMaMt2Sy8qg6l96/1reUq9B7NMPOrxLE0MvwuoqVqrzcpfrCnr9gfDbIRKu0wOTIPrLqpljLUoHwrAiR/M1c0LjJHJ0KvgTC1rXgsXS0eqEomda7gI/4s867cpvqrvaFtsmitejLxq1GsUiRhrgsyhq7uLDko67EWKlaxISeRrdorOiUxpXgy/ihELWcw/ajarKYs5qziKPAoGKk7MJ4wBqgCMKItZCP5qwqZzS8CKgWq5ylVqN+qg6xzpdquSaxJLwettahyqSivATIgMGKmwi32riYpjis7McetxiUlrx2pQa/PImYu0ayEKfqxCy4KrNEpHirkppEx1qLOsPsjJaUUrwGvMqe4Lk2w9y6HsECrVqiOKrqvziUHrcSoBCllrbAxSSiaHvgqxqkskLQqt601rH6vLykGqtwWOLJnolKvNqv3sfMxTZv3rD4rMK2AqlypvSe4IxqssK3EpQ8tWSXhqg2sTqJVrIWtmjC9tLovoKpkKj6rlaY4KEAwmbK3LSkw5CSKL+SuMSnOLd8pwjBwrRApIbN6pMypDaBzHZklmjIym9aow6oKp2+wZi9pMLwoPy4FsWerDin0sV4ycyEkqn2thakXMa2UOq/sLnEnu6cCqbkwqSfTsI+o5ydUr7wr7S4hLSkeDy4BKYSwkiMeMK6VX63CJE4oNDT/GLcsbahlLOyuDyhvpUmqVaLwL7Qw1SpNMWwmHjKMrcow3a3uqBYoZi32qskrGavOIyEhAK1HMRiqXSQuLJKuVKtOIkOtAKrnLocofB8KtEWrKK3NrRavd6d3riCmuB5orfibiKdhKW4o7qlFKaqn6Jwbqk8hmansLiCtTiykqDYxnqnoMXIwF63Dn+woZq3vJHyobzAnNLAwSbFkrIMmzKssJ4UsEhnhLqswWqKfLcop6CwKKZ8wLqd/oBqp3a9DMZkqPjD6LIIn7qeaLYImJS45rNoopK+IrFOuUapLsIMjjhxaHqGv/icSrOim6C+2sXWndqnAr76pSa0ppYktPawUsrkvx67ULCCidKYXnr4pmi79KAIwvrFaLKYhJ6dlsLGT6x6nHjsxNi9Sq6EpmysiG4isdqzhqyulIi1jLe2rdrBYKuskOCqbKOouxKrlpdIpb6hes4UohSojricyZrBuKlEqAKuPrIAs8ajFMfamobDxpI4srS4Gq7WdziZNpoGr+SiSrAGum4q5qt2nraQ9J2qqN5wBKEcngi4OKeMfBrEcLbetgC4cM6muM5a5roossKsHD7Mn9ap5LDipgiQQLxAR3i2TKpgyOyCqrlivwKlRqeotVykVIq6ulCxUpFCoeyt8LZgr2yTVrAUjLSlDqDqfdq9HLT+aUqrrI3MTCLA/r6SwXyzdp3Goh68tJf4wdy3GrWqnGaXLJXkpZKG9p94r5ahXsAYw96wGLXAmGqA+IXwt+6xYpJGmGSedrXcwyjJ7MlEkCCguH8mwPZ6WsL0uJqxyE+KxIquoKkCuZbRzrh40qCfPMe+knq+XsGcuGrEtLdIljTC4Lf+r/y1CqlWvR7J9Lmo0KTJSrBguiSo2pmCv2Z47sH2qmrD0npskGiYsKlcxhCyuLLcwXiztIwuq7K8VFa4svqQALm2q0KaXoyQsfC5bmT4sEDAHtMKtea5AIUMddK7FMGUsoaCeLoGsSa9hpNIogKk8MFwpkTPjIoQpj60jrCosgqdSKvIuxiYOLVCsNSthpxKsH7BirBEuXKrZrMU0a7JBMKKtDSposmsjZCU+M9CngB/6q8IxBjAUKXKhlSNlpOSmMC3krUmsVjPQrSQiO6rOMaYgGiVYLjqw8SaQsVEvDCyRLN4KZK78J5oeZS7Gqrouy7BuKJ+k1rGtJccq+qjvJsmpTS6lrFs0GK6ZpKirJq1zKf0u1yN9JMetfCB0sa0zqjG/sdUx4ykBLSmtHJSWLQQrGTBdqkMwCzT5LjEtWZ1SMeMrwq0MHhonobGKqhwpaqxUpOQx8SpoMF8sRKa+rdYkzK0wp6QjEDKIE6swWSRHsjIv/4BwMb0tX65iLpYqg67ClTQz7qjhJyQvvS9qtMWtGKfqMNKhfrCsHp+ZdK+WrDWuabFALaIPIjCSKBKw0qkLMNKrhq6aKgcyT7DfLzwsDCx7Kh2r2jH3L1ajB4HqMaksYicUJ8ykZrM7L4+wgy/3oG4tAqueqLWyfyySMCMwQrDpFNglOzR8L/azUClasQ2uCCVOrJws6KgALvClHKfnrM4oiitoLG6uYLFqprAv5LCOKkEonrD0LjYtfzF/sFUpsasLLkCyYa/MqnEcLS3DormnjCjdsw+pu6m3sdqwACoIMFQtfjAxJwsvRSozMS+tyCw/K4KwJLDhK/WcfK2sLP2lArCsIKSuti+YrUepUyt7seWtUy2mF2MpxbGXLhIwqKRSr4QsJyiiKCYvZqzyqlml8i8OLgkjG6qdKH+yuim/NLMsA6jUMiewqq5PMLYoNatkqKAwTzH/KRIxt7J6qDEvzqIgsw2nOK2ApQ8m6yxyK+ctAy2lMowxRS2NrEgxq6xcsrCww6j9rJGsMytyLu+iWZ4bM92pSK5uo8I0/ymOJi4woaQ7Kb0kqhsxrjavxbCCLtEzl60DKxknoiUSrteu+LDaLO4XiiRksv8sUDDSqhcuTixDKIWp/zGbql+tHqlCsjGW5CDMH+6kGCdfsY2p1C84MHaqRyeUKr8rhKy4LXcwY65pqsSqpQrdrKEw/CZVLzokKjCHrpoqk6W1KMktcCizrewg/SfYsGAqaigJKzoaM6VUsyWqqjJlqdAtGy0FI2kyNS4vpoSnbSn0KmwpHytHI6mwHi4RLUOqHyb2Lyoxyyx+sLOq2KNjqousPa1MK1Kvcx1qMMqrCLFTKfiq3zMRK0gqrjAKDtmuq7SmM9gvM60Er9qtoC9YqOGv6Sj6p0GhER6/HK2byagTLEUuzygjMj0wz5GXrUOqEK1vLospa6YkqGcweS7eJQyrtKUzrgSqu6VNnh+q3at/qfOPjCeBKxmqayrHJ8Qpqa1Vq7AuozEFK3kiKiolLmSqnibnraMwnS5XLw2wTqXiLMqpZSTOoZYrWi/uLoctEK0TLWksabDLq2+toK9+MEkv3y/XMIazmJ6GLbWoEqLLlI+mUSiAmpakOa9vLy8xmiMgKp4u+aAgML4tB6YXoXYoUis9pOgvMS7TsDoyRjMeofIc2KnpLHqt468ULgcs+KwusRcxOKqCrKOkeKYLrQCx5q1/sucuxKOMohOlQbKTreyxETC/JRWqHLEJMDOmfqkrr0KRXTDHsqwuAyWhLU0pIS+KK2w0RC6+sYEtMiE7pBgpWy81Lkqz/CwUsEExJpqpmOmwwDBXHdilracCLTMvcC0doA6utK2Prjop2jEhr88vrqlhrCWyR6xWL2moGa1Fqu6wcx8Rrd+n7SbtJwOwgjBnrF0qWazBr4Esfq1urJgmFqxZLSYhkCScsBOwOq7qo9EsqrITpl+sLi1jJVCl3yhwqxsp9CudrG2sbTBPojYvSykTIg6wUK8cmliyaaQrshEuHS9fsTmsai6hKgQzb63CJRUvMi2iL1YoWywdq4OvNCzVLQExYC6MLcapF7PSKCUoPiwDLPKsaa7Ho6OsAqzbGXMpBSwjJwywZql9Io4yWShyMJ+yGLIlrmgtsiw3q5csi6zNqgEtnqoHKWor8iu4MeOsFSTCMG0giBx8LUcTtSoyMf2y9C6MqSaweKsmLVOueaVFoCqu354Dnq0n7iaQLRyuIjPKpT6qEK8eL1ktvSk4IEOhhTKnsM8y7iuAL2Ct360HtBCxnq31olgvGzQ0q+Qq2C1wsgKhSChCLmSh2iy3oyEnhyXPsdAw3KpNrWKsAbFeqkghqCo5LjAthS+YL4AvNx2woJWkYibhL4akgy5LMaysNRrcpnYxFyw/re+uICyvsGSx5Kzypaio4B6kpEksUK0WsdYtciQoskkrWKv7KWsus6wasq6qtauDIBGcKCSvpm6t1i3ArRYz76wiJSIySLFgL1amFyDDLKguqSZlK2EssKy6K9Yvi6g5LS4wLaroMV+irybULLCqg7AuqCwk3pfJLOkos7DVrbamgTCJMV6tfbBrqBOsmLBArhMqLKxrr/WvzBjZLdwqvDKqKRky1SmvK1wseij/KxowGyjopPeiyCxDKBEtMSQOLwytZRbnqCGuYKROsSoqgTDXrbcv/Ct1MBeuyiROIEGqcI1+qE0cAC1urNgsA6pqMqmwEpk9MOWZZS4aryuvtCj4rgGpDqs5LCsoXSHAMQwunqt7rOEyVSQYKAKpUTI+pJ6nmCqlraEu16ogsDwoUKkgJh0m2C1hMVUv2J2Lr/GyIaGgrOWtrx5tIK4nFK9+rf2gKLArGServSgBKvUpI6vCKIwszyUALe8oc63LrU+jlC+JMEGwHq0vr0gsyrA3quOldi56ohExLbP9IrWol6vRJOstFCo3saopiyoaMKYwAbEsIPktxCjSMDKtKCihptsiZ7BIMd+xPa3BKEMzk43GLEYu+yYeqDerFy7VLm6nO7TcoMarDzDqMTspvyw7KLAugyq1KF6phjIHLnMpp7DlMgiugybAL3sh1Sh6Ly2jtK39rdSjOi+znEgtm6qir1ivwSTULIGeAis5snGoMS0AMDmyrTDQLnMsTavxrAuxTi2fsOSvCKXkrLmwQyzZszIpiSgareao4yQPrRSwLKgMGRUvcaxOqwibmxcpMK2oNqgPpSWvzaX2rIIwLzBwLFQmEy2VL5aocyw3KKavt6yqrsksE63nr1CmUjG5rdsp/amxKB0mkbAqJpGpyjF1KJ8X5TEosc4kXyqELQqfWzDQr14pkyfqrmcxYJ57LHYuYS1BMC8wHCXHlFmu3S+CqNYumDA+puquuK+crVenpSnQrcem0CgnKBGytithLrMwO5SHrEkzJKpgr4yqw6zjrlWthSgVsSGkqDBQSwcIQGwJ5gAgAAAAIAAAUEsDBAAACAgAAAAAAAAAAAAAAAAAAAAAAAAmACwAbGF5ZXJfbm9ybV9md2Rfa2VybmVsX3Jvdy52MS5iL3ZlcnNpb25GQigAWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWjMKUEsHCNGeZ1UCAAAAAgAAAFBLAwQAAAgIAAAAAAAAAAAAAAAAAAAAAAAANQAbAGxheWVyX25vcm1fZndkX2tlcm5lbF9yb3cudjEuYi8uZGF0YS9zZXJpYWxpemF0aW9uX2lkRkIXAFpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaMTU3MjgxOTk1MTE4NTQ2NDMwMjYwNjQyMDE0MDI0MTgzNDMyNTE4NFBLBwgeHUXPKAAAACgAAABQSwECAAAAAAgIAAAAAAAA8k4UtJcAAACXAAAAJwAAAAAAAAAAAAAAAAAAAAAAbGF5ZXJfbm9ybV9md2Rfa2VybmVsX3Jvdy52MS5iL2RhdGEucGtsUEsBAgAAAAAICAAAAAAAALfv3IMBAAAAAQAAAC4AAAAAAAAAAAAAAAAAJwEAAGxheWVyX25vcm1fZndkX2tlcm5lbF9yb3cudjEuYi8uZm9ybWF0X3ZlcnNpb25QSwECAAAAAAgIAAAAAAAAP3dx6QIAAAACAAAAMQAAAAAAAAAAAAAAAACRAQAAbGF5ZXJfbm9ybV9md2Rfa2VybmVsX3Jvdy52MS5iLy5zdG9yYWdlX2FsaWdubWVudFBLAQIAAAAACAgAAAAAAACFPeMZBgAAAAYAAAAoAAAAAAAAAAAAAAAAABICAABsYXllcl9ub3JtX2Z3ZF9rZXJuZWxfcm93LnYxLmIvYnl0ZW9yZGVyUEsBAgAAAAAICAAAAAAAAEBsCeYAIAAAACAAACUAAAAAAAAAAAAAAAAAlgIAAGxheWVyX25vcm1fZndkX2tlcm5lbF9yb3cudjEuYi9kYXRhLzBQSwECAAAAAAgIAAAAAAAA0Z5nVQIAAAACAAAAJgAAAAAAAAAAAAAAAAAQIwAAbGF5ZXJfbm9ybV9md2Rfa2VybmVsX3Jvdy52MS5iL3ZlcnNpb25QSwECAAAAAAgIAAAAAAAAHh1FzygAAAAoAAAANQAAAAAAAAAAAAAAAACSIwAAbGF5ZXJfbm9ybV9md2Rfa2VybmVsX3Jvdy52MS5iLy5kYXRhL3NlcmlhbGl6YXRpb25faWRQSwYGLAAAAAAAAAAeAy0AAAAAAAAAAAAHAAAAAAAAAAcAAAAAAAAAcAIAAAAAAAA4JAAAAAAAAFBLBgcAAAAAqCYAAAAAAAABAAAAUEsFBgAAAAAHAAcAcAIAADgkAAAAAA=='}


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
    return float(67158016)  # x read, y written, w read, b read, mean written, rstd written (from the kernel's loads)


@triton.jit
def _ref_layer_norm_fwd_kernel_row(x, y, w, b, res, res_out, mean, rstd, eps, G: tl.constexpr, D: tl.constexpr, BD: tl.constexpr, IS_RMS_NORM: tl.constexpr, HAS_RESIDUAL: tl.constexpr, STORE_RESIDUAL_OUT: tl.constexpr, HAS_WEIGHT: tl.constexpr, HAS_BIAS: tl.constexpr):
    i_t = tl.program_id(0).to(tl.int64)
    i_g = i_t % G
    x += i_t * D
    y += i_t * D
    if HAS_RESIDUAL:
        res += i_t * D
    if STORE_RESIDUAL_OUT:
        res_out += i_t * D
    o_d = tl.arange(0, BD)
    m_d = o_d < D
    b_x = tl.load(x + o_d, mask=m_d, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        b_x += tl.load(res + o_d, mask=m_d, other=0.0).to(tl.float32)
    if STORE_RESIDUAL_OUT:
        tl.store(res_out + o_d, b_x, mask=m_d)
    if not IS_RMS_NORM:
        b_mean = tl.sum(b_x, axis=0) / D
        tl.store(mean + i_t, b_mean)
        b_xbar = tl.where(m_d, b_x - b_mean, 0.0)
        b_var = tl.sum(b_xbar * b_xbar, axis=0) / D
    else:
        b_xbar = tl.where(m_d, b_x, 0.0)
        b_var = tl.sum(b_xbar * b_xbar, axis=0) / D
    b_rstd = 1 / tl.sqrt(b_var + eps)
    tl.store(rstd + i_t, b_rstd)
    if HAS_WEIGHT:
        b_w = tl.load(w + i_g * D + o_d, mask=m_d).to(tl.float32)
    if HAS_BIAS:
        b_b = tl.load(b + i_g * D + o_d, mask=m_d).to(tl.float32)
    b_x_hat = (b_x - b_mean) * b_rstd if not IS_RMS_NORM else b_x * b_rstd
    b_y = b_x_hat * b_w if HAS_WEIGHT else b_x_hat
    if HAS_BIAS:
        b_y = b_y + b_b
    tl.store(y + o_d, b_y, mask=m_d)


_REF = _ref_layer_norm_fwd_kernel_row
