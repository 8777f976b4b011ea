"""mcl.hdl"""
