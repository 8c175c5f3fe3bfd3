from dnngraph import *  # noqa: F401,F403 - `import cudnn` is dnngraph (issue #18's two-line shim)
from dnngraph import __doc__, __version__  # noqa: F401 - what the star-import leaves out
