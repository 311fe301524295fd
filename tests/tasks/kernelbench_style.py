"""KernelBench-style task sources written for these tests (not copied from KernelBench): sizes the
way KernelBench writes them, as constant expressions, products, shifts, tuples, unpacking and
literals inside `get_inputs`."""

HEADER = "import torch\nimport torch.nn as nn\n\n"

MATMUL = HEADER + '''class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)

M = 1024 * 2
K = 4096 * 2
N = 1 << 11

def get_inputs():
    return [torch.rand(M, K), torch.rand(K, N)]

def get_init_inputs():
    return []
'''

CONV3D = HEADER + '''class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, groups):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
        self.norm = nn.GroupNorm(groups, out_channels)

    def forward(self, x):
        return self.norm(self.conv(x))

batch_size = 16
in_channels = 3
out_channels = 24
groups = 8
kernel_size = (3, 5, 7)
depth, height, width = 64, 128, 256

def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size, groups]
'''

IMAGE = HEADER + '''class Model(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.conv = nn.Conv2d(3, 64, 3, padding=1)
        self.head = nn.Linear(64, num_classes)

    def forward(self, x, y):
        return self.head(torch.relu(self.conv(x + y)).mean(dim=(2, 3)))

batch_size = 2 * 5
num_classes = 1000
height = width = 224
input_shape = (batch_size, 3, height, width)

def get_inputs():
    return [torch.rand(input_shape), torch.rand(batch_size, 3, 224, 224)]

def get_init_inputs():
    return [num_classes]
'''

# The weight is written into the model: no size constant shrinks it.
HUGE_WEIGHT = HEADER + '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(65536, 65536)

    def forward(self, x):
        return self.proj(x)

batch_size = 8

def get_inputs():
    return [torch.rand(batch_size, 65536)]

def get_init_inputs():
    return []
'''

# Small by every estimate, but forward allocates far more than a child may (the estimate cannot see it).
HIDDEN_ALLOCATION = HEADER + '''class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        scratch = torch.ones(1 << 36, dtype=torch.uint8, device=x.device)
        return x + scratch[:1].to(x.dtype)

batch_size = 64

def get_inputs():
    return [torch.rand(batch_size, 16)]

def get_init_inputs():
    return []
'''

HANGS = HEADER + '''class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        while True:
            pass

def get_inputs():
    return [torch.rand(4, 4)]

def get_init_inputs():
    return []
'''

SCALE = HEADER + '''class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 2.0 + 1.0

batch_size = 16
dim = 16384 * 512

def get_inputs():
    return [torch.rand(batch_size, dim)]

def get_init_inputs():
    return []
'''
