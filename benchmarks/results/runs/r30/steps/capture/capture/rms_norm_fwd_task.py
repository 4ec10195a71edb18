"""Captured by `kpilot capture` from /work/main/benchmarks/capture/program.py:30: kernel rms_norm_fwd.

20 call(s) of this argument signature were observed. The kernel and its jit helpers are copied
verbatim (decorators replaced by @triton.jit); the reference is a frozen copy of the original (`_ref_*`) at
the captured config. Sizes are fixed by the capture, so every shape below is the captured call.
"""

import torch
import triton
import triton.language as tl
import base64
import io


@triton.jit
def rms_norm_fwd(Y, Y_row_stride, X, X_row_stride, W, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(X + row * X_row_stride + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0)
    var = tl.sum(x * x, axis=0) / n_cols
    inv = tl.math.rsqrt(var + eps)
    y = (x * inv).to(w.dtype) * w
    tl.store(Y + row * Y_row_stride + cols, y, mask=mask)


KERNELS = (rms_norm_fwd,)
CONFIG = {'BLOCK_SIZE': 4096, 'num_warps': 8, 'num_stages': 3}
_CAPTURED = dict(CONFIG)
SPACE = {'BLOCK_SIZE': [1024, 2048, 4096, 8192, 16384], 'num_warps': [1, 2, 4, 8, 16], 'num_stages': [1, 2, 3, 4]}
SHAPES = {"micro": {'captured': 1}, "full": {'captured': 1}, "edge": [{'captured': 1}]}
DTYPE = 'bfloat16'
CPU_DTYPE = 'float32'
TOLERANCE = {"float32": [1e-5, 1e-5], "float16": [1e-3, 1e-3], "bfloat16": [1e-2, 1e-2]}
PRECISION = "exact"


def grid(config):
    return (
        4096,
        1,
        1,
    )

# The captured arguments, in the kernel's parameter order.
_TENSORS = [{'name': 'Y', 'shape': [4096, 4096], 'stride': [4096, 1], 'dtype': 'bfloat16', 'saved': '', 'int_range': [], 'alias_of': ''}, {'name': 'X', 'shape': [4096, 4096], 'stride': [4096, 1], 'dtype': 'bfloat16', 'saved': '', 'int_range': [], 'alias_of': ''}, {'name': 'W', 'shape': [4096], 'stride': [1], 'dtype': 'bfloat16', 'saved': 'rms_norm_fwd.v1.W.pt', 'int_range': [], 'alias_of': ''}]
_PARAMS = [['Y', 'tensor', None], ['Y_row_stride', 'scalar', 4096], ['X', 'tensor', None], ['X_row_stride', 'scalar', 4096], ['W', 'tensor', None], ['n_cols', 'scalar', 4096], ['eps', 'scalar', 1e-06], ['BLOCK_SIZE', 'constexpr', 4096]]
_WRITTEN = [0]  # tensors the captured launch wrote (its outputs; cloned so inputs stay intact)
# Values saved from the real call (torch.save, base64): the task is one file, as the sandbox binds only it.
_SAVED = {'rms_norm_fwd.v1.W.pt': 'UEsDBAAACAgAAAAAAAAAAAAAAAAAAAAAAAAaAAgAcm1zX25vcm1fZndkLnYxLlcvZGF0YS5wa2xGQgQAWlpaWoACY3RvcmNoLl91dGlscwpfcmVidWlsZF90ZW5zb3JfdjIKcQAoKFgHAAAAc3RvcmFnZXEBY3RvcmNoCkJGbG9hdDE2U3RvcmFnZQpxAlgBAAAAMHEDWAMAAABjcHVxBE0AEHRxBVFLAE0AEIVxBksBhXEHiWNjb2xsZWN0aW9ucwpPcmRlcmVkRGljdApxCClScQl0cQpScQsuUEsHCFyziD6bAAAAmwAAAFBLAwQAAAgIAAAAAAAAAAAAAAAAAAAAAAAAIQAWAHJtc19ub3JtX2Z3ZC52MS5XLy5mb3JtYXRfdmVyc2lvbkZCEgBaWlpaWlpaWlpaWlpaWlpaWloxUEsHCLfv3IMBAAAAAQAAAFBLAwQAAAgIAAAAAAAAAAAAAAAAAAAAAAAAJAAtAHJtc19ub3JtX2Z3ZC52MS5XLy5zdG9yYWdlX2FsaWdubWVudEZCKQBaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWjY0UEsHCD93cekCAAAAAgAAAFBLAwQAAAgIAAAAAAAAAAAAAAAAAAAAAAAAGwA1AHJtc19ub3JtX2Z3ZC52MS5XL2J5dGVvcmRlckZCMQBaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpabGl0dGxlUEsHCIU94xkGAAAABgAAAFBLAwQAAAgIAAAAAAAAAAAAAAAAAAAAAAAAGAA0AHJtc19ub3JtX2Z3ZC52MS5XL2RhdGEvMEZCMABaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWloXP2U/W75OPyk/Xb6ZP/m+OL+qPru+Vb8AvYi/JT7DPy0+hj+qP+Y+OMC6vzU/j7+bv5m/wb8NvwE/OT+4voG+Yb+dvjY/UT8ePyO/iT0VwKm/3z+QPyK/579Tvx8/976vvwm/7r59Plu+xT4PP5y+JL5iP1m+TL8dPqi/DkAvPz+/IL/Cv02+jT5HP+Q/Zb8wwIK/1r8DwAw/A763v5a/+z9wvxY/Rz5TPk8/qL9lvsU+tT+XPw8/8r4HPzC+I7+DPgy/YL/Kv6e/MT/Av4s/h77Mv+Q+0r7HvQu/dD5Sv50/Cj/0v1u/sD8IP5m+OD8rv8M+Jj5iP6i+F8Bdv1a/or+/PwC/Tr/SvGy/mb/fvgNAxb2iv9U/+L+cPJS/8T4wP2w/BT9tvz0/h74FP80/iz+kv0O/Aj99vm+/wj/Kv8K/2L9sPQE/PUA1vwu/yD+gvOQ+gb99vwa/gj8mPhq/YL9LPyO/wb7rPqu+ZL+kPwc+/D+UP2e+0L6JP8o/OL+FP7i/Fb/PvCS/uL8FwNe/wL3EvpY+cz+Gvqc/Dz/NP50/tT8hv4C/9r2cPw6/P7+gPfc/rT/TvjM+sr7hvuA/kD8pv84+kr6LPeQ+pT8yv1a/g7/tvty9lL/Zv5C+Y78pPxE/Nr90PzC/E8AFwDs/CL9FP0e/8z+BP3C/Fb4fPxS+WT+cP7+8Lr8pvtA/rj3vvQA/OD+Iv2c/Zr/DPxa/jL7ZvjA/wj4gv1W/ib6sv5U/Pr+UPza+YD+RP26+Y7+AP4u+8D4LwGM/+78FQAO+D78CPwe/Rr89v3u/vD2TPNo9hD8Hvke/6j6yv5G/B75VPxW/Pr88v5A/tD91P5W/Dz9XP/w/h7/pP8E/574MP3i+jj6ePxU/2r+2Pz4+Xj99vxM/QL7ZvgRAqb9wvjA/Xj2bv6g/HD9Jv2a/Fr5mP/W+C75Ovue+lz4FQE+/676EP+2+J794Pig/VT+cvJO/iD/IPrc+qz+YP0m/Qr9zP24+M79TPjM/A79nvYc+s722v/S/qD+zPn8/ar+Mv/C//76Wv7++bb+DPxG+Dj6ZP5O/uD7XP6S/0D7Ovm+/DcAov/+/qT/Svns/E0CfPyq+dL7/P/W+Pz6vPxu/1D/Lves+JL+Xvou/XD+Rv5o6EL90vQo/zj/0vou9Cr+hvzY+Nj6xPmm/kb/YP18/iD87Psw/iz9PP5I/QD+5P2e/az6mPSW/G7+/v02/Dr+EP6Q/XT0NvVW/vD7AP/y+lr/XPz+/cD4/v7++0r0pvt0/xb9TP/O/TD9EPxnAnD6FvxQ8Wb+XPxC/zL9Uv+w+zT+nvtQ+cD8iP/S/X79Gv0u/ar5+P4Q/RD9svpY/5z0jvwLAlr8Lv6y/ur8KPs6/xT39Pp497r7lPtK/Nr8WP82/yL6bv1c+qj8OP7u/rT8eQKO/ZL8EP6O+BT+8vp8+rT/oPW0/oD/7P60/hb9OP1e/tj4MPzq+WT4mP8i+wT74v40/oz+8vsK/Xj/2OyQ//z5CP1m/rr+yv5O/Er8awKk/rr2Evs4/3z22vaw/gb+SPwC+ZD9xPhM/zL9XP4U/Lj+0P/s9gj7IPx6/dj+aP94+Vb7xPti+Cb+av+4+qL9yvw4+xb5IPtC+cL6avgw/eL8+v8Q/hT6dPTW/x77nP2m/TT+cvtm/Kr9FP1I/cb8lP+m87T4Jviu+tT8DQL4+mb7avtw+NT+Vv36/TL+4v18/GkAFvxfAiD6dPzS/cr4VPpe+wD/rP96+OD+GPqm/Wr+DP/M+JL+yP7u/PT+3v4E/+D5gvxQ+KT8Cv0y/g788vyI+mz+pvkG/Qz+RP/U97r8EvXY/XL/2vzO+HUC0v4i+Xb9nP/k+lj5Jv4I/G78YPxbAwD7bvhu+rT8TvyRABD/Mvoi9rj/Iv5q/ar88PnW/uz/Ev9W+Hz/vv+W+hT7ov3O/Hz/IP7o/Pz8IwHa/3r5sO4G/Xr9pP28/i7/0Px0/GT9Tv6k/kb8KP7G/yD13vv6+zj6ZvhvABj89Pp0/lT4WwEo+aL/KP6w/bj4OP6K/ab1KPbi+DkAZPx4+9D+zPQe9bD+BPzw/LD4cPls9lb9gvb0+oL/iv6i/zz9dP0Y/ar60v4M/xD/nvl8/GT+kv6A9Bz6kPo6/WL+cv7o+lj6+vwW/yD8HwGM+ej/Zvs0+uz/Ov9e/AD/JvzE+8r4QP4W/Qb+6v1W+Nz1aP3i/q72FPnu/Wj+Hvto9GD9lP+e+Cz79vvo9Cr+cu4g/Wj8fvwzACsABQDo/kL6+u8+/Gr/0vjo/6ryzvmE8FT+pPZ0+fL+NP5O/m7+nP1G/Fj+zv2e9d7/avq09ab9vv5w/HD4lQAq/JD9uPw6+jD8EPrg/IL8gwOW/fb8XP1Q/uL6SvzI/OT+UP5a/Gj4/v28/K79CwNO+xj9cv1c//b7OP9a/KL4+vjC9tT5CP3+/mL8Nv1w/ET8wP9283j85vp6+1D/Wv2s/0T8AQM6+Kz+YP5u+hb+gvw0+wj4uvpE/Dj+aP58/9L+6PqY+lL6qvwg/Jz92P78/DL8uv5E/q7+3vKe/OD2WvvC/QT89v88+uL8tv0a9m7/tPzs/4L+Evj2/ej+XPiM/Iz/XP7c/ID+4v6y/yT9OvR++Yb9Nv8o/LL8wP8U+dj+CPrG/ub8pPx6/Oj5XP7I/mL4tvpo98L4WPqk/pD+bv3c/lr8FP7w+pL4RwKC/cL5PPo4/Pz/kvz6/yb6jvAi/1r1UvzO/6b4FwCG/j7/JPXq/bb8DP2S/hT+4vxI/jz3DviE/p79fv+C+oz8yPya+Qj43vpS9DD7cPoO9pT/SvMq/yL2XP9w/778cP7W/mb9DP6M/ML4qv+2+u74UP8g+Hb8/P0s/1r7TP8y/0j4IvVo+E8C7vuw+C7+8vCc/sD/8P5E/nL8RP0W/Qb8GPmS/ej4ivfw/v7/2PrC/+j8Mv6W+QT8JwE0/TD28vpC/xD69PGo+GT9ivXC/DD/VPzE//b6yv9w+fj9RP5s/gL7bvrC/g7/sv1C+NT+gv2c/kz0bv1E/8L4UP08+S78DwO6+pr5RPyk/sT/VPvq+vr76PjDA4r+Qv7Q9cz+TvjC/Az1Mv98/pj1oPxK/hT9qvuy/Ir02vzdAxL/hvw2/lr9Ov6u+Fr9UP4c+Qb/aPzK+sT/fvz09MD6hv8m+AcC2Pqo/gb/ZP8O/OL+DPyLAGT+vvsC/nb8IQKA/Hb+yOw2/AD9bvpQ/h78sv9+/5T2UP8+9YTw+PpM+Jb8yvz2/Dz+Mvu2+Ej6Hv/4+Gj8nvwlAKj83PsI+ZL9Qv4c/ib4dO2g+kz8OwAI9qz+QPUo/1T8WQDQ99789PU0/Xr+qP2I/Nb8RvpM+hL+Zv8i+dL8aPyO/sT2TPx++Mb1Av7a+KT8DPuw+yb7fv9C+ib8cP+u/wT9xP40/xb5Cv6m+Ez74P2y/ez/QPq0/D78rP4w/oL0nvQDACb2GPko/YT8ZP98/Wb53vX+/d780P0W/mr+ZPdA/jD9JPwS/gT3LP3c/mT+8vi89xb87vtA+JL8qP/U/kT+Dv6S/UL8UP2M/qz9YPwq9FEDEPou+pj8Wv92/fz9qv+w/t78bQI2/1D3lvpI/nb/7vuE+wD/avQQ/0D+Lvjy/8r6Bvd2/hT8yvLm/AT+MvWM/Mr+Pvnk/PL/3v2G+ED/qvjM/1z9wv0O/hz+RP3A+jLwAwGY/tb76vtW+rL/7vs2/u79CP60/Lb/kPro/ez+Fv3I96b4sP0E/ir6Bvkq/Qr5RvxFAE78Zvxk/DL7CPt0+wL+HP1q/DL+HvtI+gjxYv+u8vD3lvWO/O79OPpq+2r8tPpi+Pr+3vpI+RL6PPiY/IT8lv9g+Tr/EPl8/Xj3VPmk9z7+UPxC9Tb6QPx4/vT/yPmy+Rj95vwG/ob45P4i/9r9Cv8E+Pz8PvVq9qLv7PhY9Wj/Jvvs+nb+Mvxa/3b4mvuW+QT+Lv3k/bz9Yv70/gL4QPxI/k79YvaI/lb4RwGs/GUCBP5A/mL+qvyU+Jj6xPoY/xj+rP6++Nj+zvl0/+j6rPpU+Ir6nP1M/Mr4avgfAEr8PP5G9ar+Tvwq/LT9YPjPASb6JP68/gz7bvz++AL/YPru+hD+MPzk+bL+nPwtAQz9YvzY/575QPse/Vz6rP7O/fz50P0e/3b/RvmQ/xL71vhw/0b9gv4g/s77EPn4/GsAgv0ZAST+BP3s+17+AP26+/j4KPzNAa75TPrq+ST/mPyM/ub6YvQi/aD+Sv4C+17x1Pgq/D0C3vn+/3zxfPcY/KsCLvwU8xz+Vv8W/375Wv9W+xb7PPoG+bD+Qv/y+2r7fPJK+4b/PPrQ8AkAXv+i/u7xgPg4/LL+4vkQ/Ib+NPuu9hj8+v/a9XD6ov+i/kL8Kv7+/Jj6Pv0M/Gz8Yv5I/R791PwK+ab+GPrC+nD+NvHy/rT43P+c+7T7ePSi/HL6BP9u9sr8RP1u+1b8IPrW+Vb+YP/4/gL7+Pgk+7L7/viw+Xz7Gvsi+GD28v3k/uj8CQLY//j60Prq98L/bv4I/vz/cPra/0r9ePYY+nz+yvsM/h765v5K/gj9DPtY+Zb+Jvze+wb8RP4Y/FD9FQOw+6j+wPy09V75VP5Y/4T0ewAzAXj/7P6Q/hT+tvoY+yz6Mvwu+mL8IQJk/Mj+SPwC+nb+CvxQ/RD8vvra/KL6ev+4+N78XvwY/hL4mv9o/ar/pv5u/WT9ZvMe/w78pP24/zL0yv7m/SD5Avy0/fj+vvss+UD/6vOa+Or4JwBU/JsDaP6s+Nj1nP22+LD9OPpk+vL4gv8W+A8D5v7g/Ob7gP5e+xz6cv8a/RL+QPhU9nb9kvZA9mT8ev0a/iT/xvlq9Nj8pv3y9oD+9Pyy/Cr4yP72/zb+qP48/4b4iPyK/gr6Sv3g/lj6TPd+/AL/vPSc/jL7ovsY+xz/UPss+ZL0av4A/nL+TP4W8hT8qPxG+Tb5Vv6s+Ir7NvEK/j7+QP/I+kz6uv4K/A0B0vte/Y71Bv0e/Ub8CvU4/Ab9Pv+A/Qr9iPrg/CT+sP8G+j791v5A/ET+QPpC4sj7FPhm/ub7fP28/Vb+nPbe+xL/ovj+/rD5zv74+mb5av5k/zT+Gv0S/cT+fv4+/D8AoP7A+aD62PxI80z6mvki/vzuaPY2/rD5IP3m92z8vPQtAQ79aP4G/WrxBv2I+ib6rvpm/VT8bvqg/Xj//v0M/PL8EvA6/Sr8RPrw/1T5oPS1Auz8SP9u+QT7Rv/y96z6Sv1W+r7+nPyU/+72RP0i/xT8bwLy7z7+gPn49o78JQCTAkD6Bv74/l72EP9++vL4EwOq/sD7SP4s/B75IP4w/JL4rv7w8ID/avao/tb88vmI9gj9cvv89pT91P2G+Dr4SP7Y/zL9evSs+pT66PyC/8z8mvqy9PL9av/S/Qz+aPvS9s7+WPjq+ND9Zv+8/iD5wvo2/xL6wv5a/5L4xvrS+eL/Kvi49k77Jvn+/Ab42v4o/mL8LwBw/ib8lP1o/WT+ovuA+8D2gPyO+C0BHPibA0Lz0vlY/Y7/rvrU9Y78Kv1g9z79pv5M+GEBkPzU/tz46P8K9NL9Sv36+Ob63Pja+rz+IP44/Br8hv7a/9L2Nv8C/gj5evoa+HD9Jvhq+nL63vkS/4z8kv5Y9lL8JP/O9s76tPio+qr8TPnM/qb6yv66/gb+mvuy/Gb9yvhI+Uz/lP1k+aj6iPwm8Dr8lPVU/uT7vv42/MD+oP32/6727vU2+hr9OP0m/0r5Pv5q/mz6YOTs/Bz+cPxq/mL40v7q/5b7MPoG/Q76Dv8G+N7+BP809mz9EPva+RD/qPpa/jr8NQLQ/Pr/BP0M9Rb9ovWW/6D6yvrI9xD/VvaU/yb+bPgBAF7+UPxjA875Uvhs+3z/Svxu/nz+VPpI/qz7wPe69LL7bvqs+YT7sv2k+gz9YP4K/Db6APiw/Vr+qP30+2jumvvm73D8NPpG9q75sv+89L78cvWs/Dj9nvi0/CD97veo+w771veQ+A0DCv7a/i7+Bv68/hb90v/a8lj/XvSU/G7+RP1Y/ej8eP4S+jr5av/E+TD+7vla+Tr+/PWM/jj+hv1i/nT8Dvxi/jT8jPdE/Cj2rv7c+kL51PyM//z0Bv/q++b7bPjTAYT91vlK/ZL+Bv3E/OL9VvoE/2r7Wv/A+Xr+jPpW+X7+Bvba+mD47QN8+Wb7kP1Q/hL+Tv+o+Mz8KP4Y/PcA6vSw/iL4SP7E/oj/AP3Q/0z8Wv78/pD/MPmC+mr9PvzS/tb7Mvr09xzwTv92+o79cP3k/jj9XP3+/oT9bv8I+Er9jP30/hL67vj2/G786vzm/Lr9Ivyg/TDy9P2U/ML7QPrA/F0DgPvw+Cb/CPQ/AtD/+Pgi+a78jP4u+7T+iP2M/vz+gvqw+Cb4Fv4S+wL8kvKg+jT8XP0M/0D10P1e/yr/5P+Q/xz/8vXQ+8r64PVc/Pz/QPvU/ab+jP2G+8z4BQDI/oj+NPhi/tb9xvXo/iL89PeS/hj4lP4i/qL/Iv4e9pD+Avf8+Zj8CQF89N79nP6c+jb/bPoK/LD+9vgU9Xj4XPbu/9D44vs2+Ar9qP8U/275kP2o9ur8gPhlAL7+Nv8s/z75Hv8g+Dr7Cv9Y+xL66P94+Wj5oPnC+N78Mv3Y/obueP/8+nb83P/o+Oj1ovhs/3r/3Pr87MT+fP08/W70vPw5Ai78JvlK+NL8jwPA/Lj40Pwc/0r8FwGC/Cr4KP6Y/rj9Rvws/3T2KPww+Dz4Ov44/Kr9GP4e++z8nvqW+PD+ZvUy+yz+rvwnAnj9wP8E9Jj8evNa+Eb8Vv4W/4r4mv5G/qL5NP2e+Gb7ov6G+hT84P92/tT5fPiy/Cr/lvzQ9Nb+Iv06/Nb85viC/8j6oPic+zr70PnY/2z+vPk8/ZL+oPtK9Br8/v9O/AL98Ppy7qr+dP2W/iz/VvwU+4D63Pgy/Kz5mvru+HL9GvaW+qb4bv9q+K76qvjq/Or6+P6M9vb8EQMc/Z7/Hv9c8sb2Yvy4/vD9AP3S+oj/Kv+K++78PP6g+g79GvwVAgT8dv08/1L+cPoa/xb1BP62+LUDMvwY/Fr6MPkc95D44PrW/uT3PPxY/1D8Uv1u/Tr+9PYS/hD86QPU9FUCDvGQ+SL2EvxC/Q78Au4s/Kj93v7y/0T4lv0jAsz4ev+a+Bj/dv1u/Mb7PP4i79L86Pqo/KL53PwG/ib+5Pyu+Hr9mP9K+jb9/v+c+BT5vv32/oz6lPzK/ur0LwK0/dz+av5a/QT5nP2k/UL9Bva++2b5+vq6/Sb+tvOe/8j5mv/a/l79gvyM+BL4NP1a/PL+BP9s/mz/6vrq/Fb9Fv2s/A79PP6a/Sb4cPws/hD9JvqK/t70EQAe/Rz8WP/i+vz/5v56+aj+ePlU/mj/ePsQ/yD4VPtC+6r7Tvwu+C70PQP+/MsCrvga/uz94v26+oz66P0g/dD44Pyc+CT4TPwDAAT+1P2W/kL46Pya/mL+NPcC/Rz+fvxc/1j4sPyY/oj4FPyQ/8D71v4q9aD/zPda/Xr+nP5C9Z792PqG+tz8AQFs/FL8/Pbw+0D8CP0q/qD1vP4U/Ur5EPxi/dj4ov3W+D7+Cvxk+Ab9oPlo/ZL6Bvq0+D77Uvoc/6j2Qv4u8yz7ePse/P7+6voS/Lz+VP1M/tD+ovtU/PD5cP9E+AEBwPcW9Lb82P7Y/Vr8oP/M+3z6kP7M/lb/qv1q9Bb/zPiK/rD9CP9U+BcBbv046k78vv5s/9T9tP46/gT+iv64+6j6TvEg/57+bP+e/hL1+v1q+Q7/0veQ9D0B0vra+pD42PzI/wb8KwKY/lr+rv/U/cD63PrW+pr+pP+O/fT87v2E/h742vxI/FsDZvlg//774Pmk+QT+lv6s9pT63vZ8/G7/TvzM/A0CcP8W8lD7APQtAurwJQCe/jb8EwAPA8T9Vv7A74D6SP5a/bL8bPue/LT7VP+A/jL/UvRG/T76Mv7q/vL8cvQPAkL5Qv7k/+D05vt0/xL0gvwg/37+0P4O/er2zPrG/G78sP5i/2T4AwEa/eL/LP609or9gPyE/pD8WwNK/q77zvhY/r744v6Y+g76oPgY+bz4Hv9+9sz6Dv7U+Kj+pP+6+fr+ZPR0/2r9pP70+579Zv/G+Bj6FPnI+JUCcu9k+2L+QvwI/eD1DP9E9fr6JPrU/Cr1gv4E+BT9Dv9s+nz62P+Q/qT+rPZA/nD99Pq2/gb7bPWq/Ar7Gv1w/PMCYP+0/vb/RPpY+nL+svzPAm78Ov/G9B8B/Pw1AmD/bv8Q+fb+ZPa8/8z47v12/zb+1vpo+Qj9wPlW/Nj+OPxg/Jb+Bvw+/tz9Gvoa/0D6kvic/lD+fvic/gz9Tvww/7L+yPtC+8T/WPxTAnTyAP5s9Ir5TP189ED47Py2/Fb/SPrs/PD7pP5y/5z0mv/i7Rz/Hvyg/ab8uvxy/Cz92vjc/X74pPha+rj7GPay/pD8jPwM/AsCtvypAwL/LvsO+AL9qvzE/Rb+LvnG/hj+7v22/OT77vrK9Mz8QP8k/uD+jPp4+3L9Vv5E/L71jPwi+Sj7DPsu/er6bvys/DT6bP4m/Br93QMQ/yL+ev3k+7D+xP/4+mb5/P7I/rj2BP867cL6uv4o+7D4Bv0BAAL+Jvos/ej/9vxy/gL8Rv3Q/vb9WvgG/j79SPmC+t76Svpm+CL8BvxG/tz8sP6g+rD4KvjW9SL3Kvoc/4T+OPx2/Fr4Hv1o/X7+LP7g+3j6sv/g+cj2PP2C/lb+UP9O8Pr+3vdW/Tj9hP/s+Yj/Cv6q/wD41PzQ+IEA6PtE+ur4KPyK/er8PP6g/Fj45wJS/DD+TP7y/XLysPZa+ZD96P1k/bT49vW2+Kj8Lv3Q/aL94viW/ED8AQKs+Kj+DPlS/p76RviC+Eb+mvyi/ir4+PxM/9z+ZP2G9dj8gPrC/EL9+vwS/gL6gv+6+9b4NPs2+AEAtwPE+sz/ePis/Rb6ivuK+bj58vwBAxr3zvzG+Ej9KPx6+7b4qv+0+Cb+0Puk+jD2uv1C+BT/Ev6k/+b5fP1W/Gr+GPsu+Ur7Ovqo/2T+yvzw/YD8Tv5W/nL6QPuO+pT8bviK/QT8CQHE/yj+wvx0/8L8bP8g/Hz8BP9u/6D63vqI81z3vvkw/Or+gPpc9dj89v9W+iL8VPhi/Jb/QPqU+Cr+Bvd49J7++vkS/iz6Fv7++lr/rv8m/ZD1yvv6++j/pPbm+N76Wvoc/2j+vvus+2jtbvj8+Hz+9Pim/yj+uvdg+oz9mvmE9Z74FP32/J7/nPsa/y7+1vwY/hz8hv1W/S7+tvry/RUDwvmo/D79kv4U+rz/Qv5E+MMCVv7C9az9rP5Y/Yj8cv8E/EUBHvfA/Nz+BvhBA0T+2v0Q/4D+Uvse/gz2KPuo+kT2OP4M/Jj/qv3G/eT4AP5c/aj/hPte+wb+8PNu/Mj3CvgI/ob4Vv14/DL0kv1a/BECtvpQ/8T0pvgc/GcASQII9r71Vv0q/lr8QPgO/gD/CvsS+1z9cP92+Mr/Pv5y/vz/svQXAtD6Gv7a/HD6IP2I/vT9yvzW/yj+KvRa/7b4vP46+lD//PsA/br/Fv928Wr9+Pzg9rj7Cvp2/sz2gv0O/sj/xPhc/hD6PP5y/Yz+RPy8/Nr+3vrK/Vb/uPgi/hD5Ov3q/7T5Cvgm/A7/LvlI/Gj+nvyA8yb96v1U/kb8Wv0e/VT4yP7a/Fj8pQFs/6j7FPyi+/73EP7O++b2KP7Q/UT/5vwo/Oz2IvgK/2r1pP8E/rj0LvwLAvD3uPgs/yr4yvvk8vb87wJ09Xz4ov8+/8j9kvsc+t755vlC/1r8oPw8/Ib9iP4a/pT4DwFE9Iz/8P6i+VL5vPmm/eL+CP9U/WD9qPYg9TT8TvwE/u7+uvzC/tD8Rv+G8vb+7v2W/Kr/jP1i/ZT8vv3S/6zzhP4G/Lj+Kvuw+mz91vdi+AD+CvxVAmD74v7W9mb/3v9M+Fr6gvY6+WT8MPse/6b2MvgQ/XL/zvoq/7b/Dv6Y+I8CNP2K/kT+kvUC/iz97P4S9v77Ev2A+jT5mv5S+CT+hv5U+uz3VPyM+oT82P6y+Sb8Hv2W/ArxBPwTAFT5FvrE+sj+FPya/HL8Avx/ALL/xPr2/nr9Cvw+8E7/AP/W+TT67v6W+qb+Bv5i/TT6HP1U/GLyJPzO/Dj8Sv4g/B79iPwLAmL+GP8C/oz6yvy2/rT6PP4g+Wb+uP7S/8b/cPk2/Jb4xPzq/cL21P5G/PL+dvo2+nr8RQGO/S76dPxU/Hj9HP1I+QL0MQLq/N7+wP4i/HMCYP7C/Br+NPvY+nz4CvoG/Fz9SPhU+m78lPgU/ND5ZP8u/kj60P8Y/6D/QPry/k781PjM/Hz9svym/tT/Wv7++nr+lP0k/jb82vw/Avb8Iv6I/mj4Mvqs/oL2FPvs/or/nP8S/lT90v8O+lz8Dv3Q98L9+Piy/7L8Jvus+ob8fP8y/8L9av5g/Sz91P5w9o75Xvp0+Sr/EPrS/GD/hPh6+z7/JP6I/qL6zvoo/qr/BPla+mD4FQEm+xr4CPu++rT/Jvq69678TP6Y/Pj8bPxG/sr5SP4K/iz8pwMw9UT8UQGW/WD+uP2g/sL3mPg2/mT7pP4o9ob8sP7W/u776PWE/GT+evyM/hj6sPum/8j5ZP5k/ST5RP60/oT6cv5a/NT+7vt69pL5Tv4+/EL8aPwG/RL9yPwQ+sz81Pu6+Az/ovSK/lj16P9c+m72Bv68/87++v5q9hT9vv6K/4r9APIA/gT6fvzQ/JT+Av+K9/j6DPgu/oj06vco/9T+5PQ0/Vz8bvx/AkbxWPb+/Uj48vTa/vj5PvyZATT31v6Q/VT11v6o+g73EvyW/vj7sPxa/YD8TQLI+Bb8oPdq+5L6Lvzy+/75gv30+A8BDPx2/Dz8lvqS+0b43v1BLBwjMAfLRACAAAAAgAABQSwMEAAAICAAAAAAAAAAAAAAAAAAAAAAAABkAOQBybXNfbm9ybV9md2QudjEuVy92ZXJzaW9uRkI1AFpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaMwpQSwcI0Z5nVQIAAAACAAAAUEsDBAAACAgAAAAAAAAAAAAAAAAAAAAAAAAoACgAcm1zX25vcm1fZndkLnYxLlcvLmRhdGEvc2VyaWFsaXphdGlvbl9pZEZCJABaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWloxNTcyODE5OTUxMTg1NDY0MzAyNjA0MDcwMjUxODkxOTQ5ODY4NTg2UEsHCD3s88woAAAAKAAAAFBLAQIAAAAACAgAAAAAAABcs4g+mwAAAJsAAAAaAAAAAAAAAAAAAAAAAAAAAABybXNfbm9ybV9md2QudjEuVy9kYXRhLnBrbFBLAQIAAAAACAgAAAAAAAC379yDAQAAAAEAAAAhAAAAAAAAAAAAAAAAAOsAAABybXNfbm9ybV9md2QudjEuVy8uZm9ybWF0X3ZlcnNpb25QSwECAAAAAAgIAAAAAAAAP3dx6QIAAAACAAAAJAAAAAAAAAAAAAAAAABRAQAAcm1zX25vcm1fZndkLnYxLlcvLnN0b3JhZ2VfYWxpZ25tZW50UEsBAgAAAAAICAAAAAAAAIU94xkGAAAABgAAABsAAAAAAAAAAAAAAAAA0gEAAHJtc19ub3JtX2Z3ZC52MS5XL2J5dGVvcmRlclBLAQIAAAAACAgAAAAAAADMAfLRACAAAAAgAAAYAAAAAAAAAAAAAAAAAFYCAABybXNfbm9ybV9md2QudjEuVy9kYXRhLzBQSwECAAAAAAgIAAAAAAAA0Z5nVQIAAAACAAAAGQAAAAAAAAAAAAAAAADQIgAAcm1zX25vcm1fZndkLnYxLlcvdmVyc2lvblBLAQIAAAAACAgAAAAAAAA97PPMKAAAACgAAAAoAAAAAAAAAAAAAAAAAFIjAABybXNfbm9ybV9md2QudjEuVy8uZGF0YS9zZXJpYWxpemF0aW9uX2lkUEsGBiwAAAAAAAAAHgMtAAAAAAAAAAAABwAAAAAAAAAHAAAAAAAAABUCAAAAAAAA+CMAAAAAAABQSwYHAAAAAA0mAAAAAAAAAQAAAFBLBQYAAAAABwAHABUCAAD4IwAAAAA='}


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


def _run(kernel, inputs, config):
    ins, clones = list(inputs), {}
    for i, t in enumerate(ins):  # written tensors (and their aliases) are cloned once each
        if i in _WRITTEN or any(ins[j] is t for j in _WRITTEN):
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
    return _run(KERNELS[0], inputs, config)


def reference(inputs):
    return _run(_REF, inputs, _CAPTURED)


def flops(shape):
    return 0.0  # not known from a capture: no FLOP formula, so no compute roofline


def bytes_moved(shape):
    return float(100671488)


@triton.jit
def _ref_rms_norm_fwd(Y, Y_row_stride, X, X_row_stride, W, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(X + row * X_row_stride + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0)
    var = tl.sum(x * x, axis=0) / n_cols
    inv = tl.math.rsqrt(var + eps)
    y = (x * inv).to(w.dtype) * w
    tl.store(Y + row * Y_row_stride + cols, y, mask=mask)


_REF = _ref_rms_norm_fwd
