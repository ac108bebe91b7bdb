"""Change points in a performance history: E-divisive means on sliding windows, merged by a
Student t-test (the method of Apache Otava, Fleming et al., ICPE 2023), the direction of each
change, and PyTorch HUD's labels for the newest points. Plain numbers in, dataclasses out."""
